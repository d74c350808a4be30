package io.stockade.proxy.backend.s3;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * Listings without tombstones.
 * <p>
 * A tombstone is a small object ({@link Tombstone#SIZE} bytes; zero from earlier versions) that keeps a deleted
 * object's token (the atomic class's fence). Listed as it is, it breaks everyday tools: {@code aws s3 sync} and
 * {@code rclone copy} download it and get 404 {@code NoSuchKey} (the proxy answers a tombstone as missing),
 * {@code aws s3 ls} shows deleted keys. A listing carries no metadata, so a tombstone cannot be told from a real
 * object of that size by the listing alone: every entry of a tombstone's size is read with HEAD (a few at a time),
 * and those that are tombstones are cut out of the XML. A common prefix under which only tombstones are left is
 * cut out too (checked with one more listing of that prefix). Entries of any other size are never looked at.
 * <p>
 * The XML is edited as text, entry by entry, so that everything else of the store's answer (its order, its
 * markers, its namespace, fields the proxy does not know) reaches the client as the store wrote it. Counts that
 * would lie are corrected: {@code KeyCount} (ListObjectsV2), and a ListObjects (v1) page that is truncated
 * without a {@code NextMarker} gets one naming the last key of the store's page, since a client would otherwise
 * take its last <em>visible</em> key as the next marker (or none, when every entry was hidden).
 */
final class Listings {
    /** How many HEAD or list requests one listing sends to the store at once. */
    static final int PARALLEL = 16;
    private static final ExecutorService THREADS = Executors.newVirtualThreadPerTaskExecutor();
    private static final Pattern CONTENTS = Pattern.compile("<Contents>(.*?)</Contents>", Pattern.DOTALL);
    private static final Pattern VERSION = Pattern.compile("<Version>(.*?)</Version>", Pattern.DOTALL);
    private static final Pattern PREFIXES = Pattern.compile("<CommonPrefixes>(.*?)</CommonPrefixes>", Pattern.DOTALL);
    private static final Pattern KEY = Pattern.compile("<Key>(.*?)</Key>", Pattern.DOTALL);
    private static final Pattern PREFIX = Pattern.compile("<Prefix>(.*?)</Prefix>", Pattern.DOTALL);
    private static final Pattern SIZE = Pattern.compile("<Size>\\s*([0-9]+)\\s*</Size>");
    private static final Pattern VERSION_ID = Pattern.compile("<VersionId>(.*?)</VersionId>", Pattern.DOTALL);
    private static final Pattern KEY_COUNT = Pattern.compile("<KeyCount>\\s*([0-9]+)\\s*</KeyCount>");
    private static final Pattern TRUNCATED = Pattern.compile("<IsTruncated>\\s*true\\s*</IsTruncated>");

    private Listings() {
    }

    /** What kind of listing an answer is. */
    enum Kind {
        /** ListObjects (v1): {@code <Contents>}, {@code NextMarker} only with a delimiter. */
        V1,
        /** ListObjectsV2: {@code <Contents>} and {@code KeyCount}. */
        V2,
        /** ListObjectVersions: {@code <Version>} (and {@code <DeleteMarker>}, left as they are). */
        VERSIONS
    }

    /** How the proxy learns what an entry is: a HEAD and a listing at the store. */
    interface Probe {
        /**
         * Whether the object (or this version of it) is a tombstone; an object that no longer exists counts as one
         * (it is not there to list).
         *
         * @param versionId the version, or null for the current one
         * @throws Unavailable when the store did not say
         */
        boolean tombstone(String key, @Nullable String versionId);

        /**
         * Whether anything but tombstones lives under a prefix.
         *
         * @throws Unavailable when the store did not say
         */
        boolean live(String prefix);
    }

    /** The store could not tell what an entry is: the listing is not answered (503). */
    static final class Unavailable extends RuntimeException {
        Unavailable(String message) {
            super(message, null, false, false);
        }
    }

    /** The edited listing, and how many entries were cut out of it. */
    record Filtered(String xml, int hidden) {
    }

    /**
     * Cuts the tombstones out of a listing.
     *
     * @param urlEncoded whether the listing's keys are URL-encoded ({@code encoding-type=url})
     */
    static Filtered filter(String xml, Kind kind, boolean urlEncoded, Probe probe) {
        Pattern entries = kind == Kind.VERSIONS ? VERSION : CONTENTS;
        List<int[]> cut = new ArrayList<>();
        List<Future<Boolean>> verdicts = new ArrayList<>();
        List<int[]> spans = new ArrayList<>();
        Semaphore permits = new Semaphore(PARALLEL);
        String lastKey = null;
        Matcher m = entries.matcher(xml);
        while (m.find()) {
            String entry = m.group(1);
            Matcher key = KEY.matcher(entry);
            if (!key.find()) {
                continue;
            }
            lastKey = key.group(1);
            Matcher size = SIZE.matcher(entry);
            if (!size.find() || !Tombstone.maySize(parseSize(size.group(1)))) {
                continue;
            }
            String name = decode(key.group(1), urlEncoded);
            String versionId = null;
            if (kind == Kind.VERSIONS) {
                Matcher v = VERSION_ID.matcher(entry);
                if (v.find() && !v.group(1).isEmpty() && !v.group(1).equals("null")) {
                    versionId = S3Xml.unescape(v.group(1));
                }
            }
            String id = versionId;
            spans.add(new int[]{m.start(), m.end()});
            verdicts.add(submit(permits, () -> probe.tombstone(name, id)));
        }
        Matcher p = PREFIXES.matcher(xml);
        while (p.find()) {
            Matcher prefix = PREFIX.matcher(p.group(1));
            if (!prefix.find()) {
                continue;
            }
            String name = decode(prefix.group(1), urlEncoded);
            spans.add(new int[]{p.start(), p.end()});
            verdicts.add(submit(permits, () -> !probe.live(name)));
        }
        for (int i = 0; i < spans.size(); i++) {
            if (await(verdicts.get(i))) {
                cut.add(spans.get(i));
            }
        }
        if (cut.isEmpty()) {
            return new Filtered(xml, 0);
        }
        cut.sort((a, b) -> Integer.compare(a[0], b[0]));
        StringBuilder out = new StringBuilder(xml.length());
        int at = 0;
        for (int[] span : cut) {
            out.append(xml, at, span[0]);
            at = span[1];
        }
        out.append(xml, at, xml.length());
        String edited = out.toString();
        if (kind == Kind.V2) {
            Matcher count = KEY_COUNT.matcher(edited);
            if (count.find()) {
                long left = Math.max(0, Long.parseLong(count.group(1)) - cut.size());
                edited = edited.substring(0, count.start()) + "<KeyCount>" + left + "</KeyCount>"
                        + edited.substring(count.end());
            }
        }
        if (kind == Kind.V1 && lastKey != null && !edited.contains("<NextMarker>")) {
            Matcher truncated = TRUNCATED.matcher(edited);
            if (truncated.find()) {
                edited = edited.substring(0, truncated.end()) + "<NextMarker>" + lastKey + "</NextMarker>"
                        + edited.substring(truncated.end());
            }
        }
        return new Filtered(edited, cut.size());
    }

    /** The keys and sizes of a listing's {@code <Contents>}, for a probe that lists a prefix itself. */
    record Entry(String key, long size) {
    }

    /** A page of a ListObjectsV2 answer: its entries, and the token of the next page (null when none). */
    record Page(List<Entry> entries, @Nullable String next) {
    }

    static Page page(String xml) {
        List<Entry> entries = new ArrayList<>();
        Matcher m = CONTENTS.matcher(xml);
        while (m.find()) {
            Matcher key = KEY.matcher(m.group(1));
            Matcher size = SIZE.matcher(m.group(1));
            if (key.find()) {
                entries.add(new Entry(S3Xml.unescape(key.group(1)), size.find() ? parseSize(size.group(1)) : -1));
            }
        }
        String next = null;
        if (TRUNCATED.matcher(xml).find()) {
            Matcher token = Pattern.compile("<NextContinuationToken>(.*?)</NextContinuationToken>", Pattern.DOTALL)
                    .matcher(xml);
            next = token.find() ? S3Xml.unescape(token.group(1)) : null;
        }
        return new Page(entries, next);
    }

    private static long parseSize(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }

    /** A key as the listing names it: XML text, URL-encoded with {@code encoding-type=url}. */
    static String decode(String text, boolean urlEncoded) {
        String key = S3Xml.unescape(text);
        if (!urlEncoded) {
            return key;
        }
        // As the AWS SDKs read it (unquote_plus): '+' is a space, a plus is %2B.
        return SigV4.decode(key.replace('+', ' '));
    }

    private static Future<Boolean> submit(Semaphore permits, Callable<Boolean> task) {
        return THREADS.submit(() -> {
            permits.acquire();
            try {
                return task.call();
            } finally {
                permits.release();
            }
        });
    }

    private static boolean await(Future<Boolean> verdict) {
        try {
            return verdict.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Unavailable("the proxy is stopping");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Unavailable unavailable) {
                throw unavailable;
            }
            throw new Unavailable("telling tombstones from objects failed: "
                    + S3Failures.root(Objects.requireNonNull(e.getCause(), "a task that threw has its cause")));
        }
    }
}
