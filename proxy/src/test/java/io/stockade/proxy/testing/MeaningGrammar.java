package io.stockade.proxy.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Tuple;

/**
 * A grammar of requests that vary in <em>meaning</em>, not only in spelling ({@link TargetGrammar} does that): the
 * method (standard, WebDAV, unknown, lower-case), the target (a few resources of several scopes, keys a store may
 * fold: a trailing {@code /}, a {@code \}), the query (every object and bucket sub-resource of AWS's S3 model,
 * unknown and presign-like parameters, {@code _method} as frameworks read it), the headers that change what a
 * storage does ({@code x-amz-copy-source}, {@code x-amz-metadata-directive}, {@code Destination},
 * {@code Overwrite}, {@code Depth}, method overrides and URL rewrites, {@code Connection} naming one of them), the
 * body and the token (none, malformed, stale, equal or higher than the fence the request meets). The resources are
 * few on purpose, so that a request meets fences and objects earlier ones left. {@link MeaningOracle} judges each.
 * <p>
 * A request is built from one random seed (jqwik draws the seed; a failure prints the request in full). The
 * seeds of the default-deny issue, the requests its reproductions sent, are in {@link MeaningSeeds}: every
 * property draws them too.
 */
public final class MeaningGrammar {
    private MeaningGrammar() {
    }

    /** The token a request carries, relative to the highest fence of the resources it is {@code about}. */
    public enum Token {
        /** FAR jumps 20 or more over the highest: past the {@code max-advance} of the configuration axis. */
        NONE, MALFORMED, STALE, EQUAL, HIGHER, FAR;

        /** The token to send (null: none, or a malformed one for {@link #MALFORMED}). */
        public Long resolve(long highest, int jitter) {
            return switch (this) {
                case NONE, MALFORMED -> null;
                case STALE -> Math.max(0, highest - 1 - jitter % 3);
                case EQUAL -> highest;
                case HIGHER -> highest + 1 + jitter % 3;
                case FAR -> highest + 20 + jitter % 3;
            };
        }
    }

    /** A query parameter; a null value is a bare name ({@code ?acl}). Raw for the http backends, plain for S3. */
    public record Param(String name, String value) {
        @Override
        public String toString() {
            return value == null ? name : name + "=" + value;
        }
    }

    /** A header; {@code signed} says whether an S3 request's signature covers it (other backends ignore it). */
    public record Header(String name, String value, boolean signed) {
        @Override
        public String toString() {
            return name + ": " + value + (signed ? "" : " (unsigned)");
        }
    }

    /**
     * One request.
     *
     * @param method    the method as sent on the wire
     * @param signedAs  the method an S3 request is signed with (another case than {@code method} to see that the
     *                  proxy and the store read one method), else the same
     * @param target    what the path addresses, for the tally ({@code object}, {@code bucket}, {@code dav}...)
     * @param path      the path, spelled as sent
     * @param query     the query parameters in order
     * @param headers   the headers besides Host, the token and the framing
     * @param body      the body (may be empty)
     * @param token     the token, relative to the fences of {@code about}
     * @param jitter    how far a stale or higher token is from the fence (0..2)
     * @param about     the storage's names of the resources whose fences the token is drawn against
     * @param presigned an S3 request signed in its query rather than its {@code Authorization} header
     * @param tokenSigned whether an S3 request's signature covers the token header
     * @param seed      the seed of the issue it comes from, or null for a generated one
     */
    public record Request(String method, String signedAs, String target, String path, List<Param> query,
                         List<Header> headers, String body, Token token, int jitter, List<String> about,
                         boolean presigned, boolean tokenSigned, String seed) {
        public Request {
            query = List.copyOf(query);
            headers = List.copyOf(headers);
            about = List.copyOf(about);
        }

        /** The request target: the path and the query as sent. */
        public String rawTarget() {
            StringBuilder out = new StringBuilder(path);
            char sep = '?';
            for (Param p : query) {
                out.append(sep).append(p);
                sep = '&';
            }
            return out.toString();
        }

        /** For a message: everything sent, with the token drawn. */
        public String describe(Long drawn) {
            return (seed == null ? "" : "[seed " + seed + "] ") + method + (signedAs.equals(method) ? ""
                    : " (signed as " + signedAs + ")") + " " + rawTarget() + (presigned ? " presigned" : "")
                    + " " + headers + " token " + token + (drawn == null ? "" : "=" + drawn)
                    + (tokenSigned ? "" : " (unsigned)") + " body " + body.length() + " bytes";
        }

        /** The features a tally counts the answer under: method, target, each parameter and header, the token. */
        public Set<String> features() {
            Set<String> out = new TreeSet<>();
            out.add("method " + method + (signedAs.equals(method) ? "" : " signed as " + signedAs));
            out.add("target " + target);
            out.add("token " + token.name().toLowerCase(Locale.ROOT));
            if (query.isEmpty()) {
                out.add("query none");
            }
            for (Param p : query) {
                out.add("query " + p.name());
            }
            for (Header h : headers) {
                String name = h.name().toLowerCase(Locale.ROOT);
                out.add("header " + (name.equals("connection") ? "connection: " + h.value().toLowerCase(Locale.ROOT)
                        : name) + (h.signed() ? "" : " (unsigned)"));
            }
            if (presigned) {
                out.add("presigned");
            }
            if (seed != null) {
                out.add("seed " + seed);
            }
            return out;
        }

        /** This request with another token. */
        public Request withToken(Token kind, int distance) {
            return new Request(method, signedAs, target, path, query, headers, body, kind, distance, about, presigned,
                    tokenSigned, seed);
        }

        /** This request as a seed of the issue. */
        public Request asSeed(String name) {
            return new Request(method, signedAs, target, path, query, headers, body, token, jitter, about, presigned,
                    tokenSigned, name);
        }
    }

    /** Builds a request step by step; the grammar's and the seeds' common way. */
    public static final class Builder {
        private String method;
        private String signedAs;
        private String target = "object";
        private final String path;
        private final List<Param> query = new ArrayList<>();
        private final List<Header> headers = new ArrayList<>();
        private String body = "";
        private Token token = Token.NONE;
        private int jitter;
        private final List<String> about = new ArrayList<>();
        private boolean presigned;
        private boolean tokenSigned = true;

        public Builder(String method, String path) {
            this.method = method;
            this.signedAs = method;
            this.path = path;
        }

        public Builder target(String kind) {
            this.target = kind;
            return this;
        }

        /** Signed (S3) with this spelling of the method, sent with the one given first. */
        public Builder signedAs(String spelling) {
            this.signedAs = spelling;
            return this;
        }

        public Builder param(String name, String value) {
            query.add(new Param(name, value));
            return this;
        }

        public Builder header(String name, String value) {
            return header(name, value, true);
        }

        public Builder header(String name, String value, boolean signed) {
            headers.add(new Header(name, value, signed));
            return this;
        }

        public Builder body(String text) {
            this.body = text;
            return this;
        }

        public Builder token(Token kind) {
            return token(kind, 0);
        }

        public Builder token(Token kind, int distance) {
            this.token = kind;
            this.jitter = distance;
            return this;
        }

        public Builder about(String... resources) {
            about.addAll(List.of(resources));
            return this;
        }

        public Builder presigned() {
            this.presigned = true;
            return this;
        }

        public Builder unsignedToken() {
            this.tokenSigned = false;
            return this;
        }

        public Request build() {
            return new Request(method, signedAs, target, path, query, headers, body, token, jitter, about, presigned,
                    tokenSigned, null);
        }
    }

    // ---- what every grammar draws from ----

    /** Methods: standard, WebDAV (RFC 4918 and its extensions), unknown tokens; a few lower-case. */
    static final List<String> METHODS = List.of("GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH", "TRACE",
            "COPY", "MOVE", "MKCOL", "PROPFIND", "PROPPATCH", "LOCK", "UNLOCK", "SEARCH", "BIND", "REBIND", "UNBIND",
            "MERGE", "BREW", "FOO");

    static Token token(Random random) {
        int n = random.nextInt(100);
        return n < 10 ? Token.NONE : n < 13 ? Token.MALFORMED : n < 35 ? Token.STALE : n < 55 ? Token.EQUAL
                : n < 92 ? Token.HIGHER : Token.FAR;
    }

    /** A method: mostly the writes the table knows, some of everything else, some lower-case. */
    static String method(Random random, List<String> common) {
        int n = random.nextInt(100);
        String method = n < 65 ? pick(random, common) : pick(random, METHODS);
        return random.nextInt(12) == 0 ? lowerCase(method, random) : method;
    }

    static String lowerCase(String method, Random random) {
        return random.nextBoolean() ? method.toLowerCase(Locale.ROOT)
                : method.charAt(0) + method.substring(1).toLowerCase(Locale.ROOT);
    }

    static String body(Random random, int n) {
        return switch (random.nextInt(4)) {
            case 0 -> "";
            default -> "body " + n + " " + Long.toHexString(random.nextLong());
        };
    }

    @SafeVarargs
    static <T> T pick(Random random, T... options) {
        return options[random.nextInt(options.length)];
    }

    static <T> T pick(Random random, List<T> options) {
        return options.get(random.nextInt(options.size()));
    }

    /** Generated requests, with the seeds of the issue mixed in (one in eight). */
    static Arbitrary<Request> withSeeds(java.util.function.Function<Random, Request> grammar, List<Request> seeds) {
        Arbitrary<Request> generated = Arbitraries.longs().map(seed -> grammar.apply(new Random(seed)));
        return Arbitraries.frequencyOf(Tuple.of(7, generated), Tuple.of(1, Arbitraries.of(seeds)));
    }

    // ---- S3 ----

    /** The buckets of an S3 run: where the writes go, another (a copy's source), one left empty, one absent. */
    public static final String BUCKET = "mfz";
    public static final String OTHER = "mot";
    public static final String EMPTY = "mpt";
    /** Keys: plain, one a store folds ({@code k/} beside {@code k}), a folder marker, needing escapes, refused. */
    static final List<String> KEYS = List.of("k", "k", "v", "k/", "d/k", "d/", "a b", "é", "k\\x", "t%");

    /** Every object sub-resource of AWS's S3 model, and the parameters of object operations. */
    static final List<String> OBJECT_PARAMS = List.of("acl", "attributes", "legal-hold", "retention", "tagging",
            "torrent", "restore", "select", "select-type=2", "renameObject", "encryption", "uploads", "uploadId=u1",
            "partNumber=1", "versionId=null", "versionId=v1", "response-content-type=text/plain", "max-parts=1");
    /** Every bucket sub-resource of AWS's S3 model, and the parameters of listings. */
    static final List<String> BUCKET_PARAMS = List.of("abac", "accelerate", "acl", "analytics", "cors", "encryption",
            "intelligent-tiering", "inventory", "lifecycle", "location", "logging", "metadataConfiguration",
            "metadataInventoryTable", "metadataJournalTable", "metadataTable", "metrics", "notification", "object-lock",
            "ownershipControls", "policy", "policyStatus", "publicAccessBlock", "replication", "requestPayment",
            "tagging", "versioning", "website", "versions", "uploads", "delete", "list-type=2", "prefix=d/",
            "delimiter=/", "id=i1", "session", "continuation-token=c");
    /** Parameters no row takes, and the presigning and hoisting kind. */
    static final List<String> ODD_PARAMS = List.of("x=1", "foo", "_method=DELETE", "X-HTTP-Method-Override=DELETE",
            "ACL", "x-id=PutObject", "X-Amz-Expires=300", "x-amz-meta-fencing-token=99", "x-amz-copy-source=/mot/ov",
            "x-amz-acl=public-read", "x-amz-meta-owner=q", "X-Amz-Signature=00");

    /** The headers that change what S3 does, with values a client might send. */
    static final List<String[]> S3_HEADERS = List.of(
            new String[] {"x-amz-copy-source", "/mot/ov", "/mfz/k", "mfz/d/k", "/mfz/v?versionId=null", "/mfz/%6B",
                "/mfz/k/", "/nob/x", "/mfz/seed/src"},
            new String[] {"x-amz-metadata-directive", "COPY", "REPLACE", "replace"},
            new String[] {"x-amz-tagging-directive", "REPLACE"},
            new String[] {"x-amz-copy-source-range", "bytes=0-1"},
            new String[] {"x-amz-copy-source-if-match", "\"x\""},
            new String[] {"x-amz-meta-owner", "m"},
            new String[] {"x-amz-meta-fencing-token", "99", "1"},
            new String[] {"x-amz-meta-fencing-deleted", "true"},
            new String[] {"x-amz-meta-stockade-fence", "99", "1"},
            new String[] {"x-amz-acl", "public-read", "private"},
            new String[] {"x-amz-grant-read", "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""},
            new String[] {"x-amz-tagging", "a=b"},
            new String[] {"x-amz-rename-source", "/mfz/k"},
            new String[] {"x-amz-write-offset-bytes", "0"},
            new String[] {"x-amz-bucket-object-lock-enabled", "true"},
            new String[] {"x-amz-object-lock-legal-hold", "ON"},
            new String[] {"x-amz-storage-class", "STANDARD"},
            new String[] {"x-amz-if-match-size", "1"},
            new String[] {"If-Match", "\"x\"", "*"},
            new String[] {"If-None-Match", "*"},
            new String[] {"Content-Type", "multipart/form-data; boundary=b", "application/xml", "text/plain"},
            new String[] {"X-HTTP-Method-Override", "DELETE", "PUT"},
            new String[] {"X-Original-URL", "/mfz/v"},
            new String[] {"Destination", "/mfz/v"},
            new String[] {"Connection", "x-amz-copy-source", "x-amz-metadata-directive", "Fencing-Token",
                "Destination", "x-amz-acl", "Content-Type"});

    /** S3 requests of the closed table's kind, against the buckets above. */
    public static Arbitrary<Request> s3() {
        return withSeeds(MeaningGrammar::s3, MeaningSeeds.s3());
    }

    static Request s3(Random random) {
        int shape = random.nextInt(20);
        if (shape == 0) {
            return deleteObjects(random);
        }
        if (shape <= 2) {
            return copyObject(random);
        }
        if (shape <= 6) {
            // a plain write, so that the odd requests meet objects, tombstones and fences of every height
            String key = pick(random, KEYS);
            String method = random.nextInt(4) == 0 ? "DELETE" : "PUT";
            return new Builder(method, "/" + BUCKET + "/" + s3Path(key)).target("object")
                    .body(method.equals("PUT") ? body(random, random.nextInt(1000)) : "")
                    .token(random.nextInt(5) == 0 ? Token.STALE : Token.HIGHER, random.nextInt(3))
                    .about(BUCKET + "/" + key).build();
        }
        String method = method(random, List.of("PUT", "PUT", "PUT", "DELETE", "POST", "GET", "HEAD", "OPTIONS"));
        String bucket = random.nextInt(6) == 0 ? pick(random, OTHER, EMPTY, "nob") : BUCKET;
        int what = random.nextInt(10);
        String key = what < 7 ? pick(random, KEYS) : null;
        String path = what == 9 ? "/" : "/" + bucket + (key == null ? (what == 8 ? "/" : "") : "/" + s3Path(key));
        Builder b = new Builder(method, path).target(what == 9 ? "service" : key == null ? "bucket" : "object");
        if (!method.equals(method.toUpperCase(Locale.ROOT)) && random.nextInt(4) != 0) {
            // sent in lower case, signed as the upper-case method the proxy and the store read
            b.signedAs(method.toUpperCase(Locale.ROOT));
        }
        int params = random.nextInt(10) < 4 ? 0 : 1 + random.nextInt(random.nextInt(5) == 0 ? 3 : 1);
        for (int i = 0; i < params; i++) {
            int kind = random.nextInt(10);
            String param = kind < 5 ? pick(random, key == null ? BUCKET_PARAMS : OBJECT_PARAMS)
                    : kind < 8 ? pick(random, key == null ? OBJECT_PARAMS : BUCKET_PARAMS) : pick(random, ODD_PARAMS);
            int eq = param.indexOf('=');
            b.param(eq < 0 ? param : param.substring(0, eq), eq < 0 ? null : param.substring(eq + 1));
        }
        if (params > 0 && random.nextInt(15) == 0) {
            Param first = b.query.getFirst();
            b.param(first.name(), first.value());
        }
        int headers = random.nextInt(10) < 3 ? 0 : 1 + random.nextInt(3);
        for (int i = 0; i < headers; i++) {
            String[] h = pick(random, S3_HEADERS);
            boolean connection = h[0].equals("Connection");
            b.header(h[0], h[1 + random.nextInt(h.length - 1)], !connection && random.nextInt(8) != 0);
        }
        if (method.equalsIgnoreCase("POST") && b.query.stream().anyMatch(p -> p.name().equals("delete"))) {
            b.body("<Delete><Object><Key>k</Key></Object><Object><Key>" + pick(random, KEYS) + "</Key></Object>"
                    + "</Delete>");
        } else {
            b.body(body(random, random.nextInt(1000)));
        }
        b.token(token(random), random.nextInt(3)).about(bucket + (key == null ? "" : "/" + key));
        if (random.nextInt(10) == 0) {
            b.presigned();
        }
        if (random.nextInt(12) == 0) {
            b.unsignedToken();
        }
        return b.build();
    }

    /** DeleteObjects ({@code POST /bucket?delete}): several keys in one request, each its own scope. */
    static Request deleteObjects(Random random) {
        StringBuilder xml = new StringBuilder("<Delete>");
        int keys = 1 + random.nextInt(3);
        List<String> about = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
            String key = pick(random, KEYS);
            xml.append("<Object><Key>").append(key.replace("&", "&amp;").replace("<", "&lt;")).append("</Key>")
                    .append("</Object>");
            about.add(BUCKET + "/" + key);
        }
        String body = xml.append("</Delete>").toString();
        Builder b = new Builder("POST", "/" + BUCKET).target("bucket").param("delete", null).body(body)
                .token(token(random), random.nextInt(3)).about(about.toArray(String[]::new));
        if (random.nextInt(4) != 0) {
            b.header("Content-MD5", contentMd5(body));
        }
        return b.build();
    }

    /** CopyObject: a PUT of a key with {@code x-amz-copy-source} naming another (or the same) object. */
    static Request copyObject(Random random) {
        String key = pick(random, KEYS);
        String source = "/" + (random.nextInt(4) == 0 ? OTHER + "/ov" : BUCKET + "/" + s3Path(pick(random, KEYS)));
        Builder b = new Builder("PUT", "/" + BUCKET + "/" + s3Path(key)).target("object")
                .header("x-amz-copy-source", source);
        if (random.nextBoolean()) {
            b.header("x-amz-metadata-directive", pick(random, "COPY", "REPLACE"));
        }
        if (random.nextInt(4) == 0) {
            b.header("x-amz-meta-fencing-token", pick(random, "1", "99"));
        }
        if (random.nextInt(6) == 0) {
            b.header("Connection", pick(random, "x-amz-copy-source", "x-amz-metadata-directive"), false);
        }
        return b.token(token(random), random.nextInt(3)).about(BUCKET + "/" + key).build();
    }

    public static String contentMd5(String body) {
        try {
            return java.util.Base64.getEncoder().encodeToString(java.security.MessageDigest.getInstance("MD5")
                    .digest(body.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A key in a path as SigV4 encodes it (every byte but the unreserved ones and {@code /}). */
    public static String s3Path(String key) {
        StringBuilder out = new StringBuilder();
        for (byte x : key.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            char c = (char) (x & 0xff);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || "-_.~/".indexOf(c) >= 0) {
                out.append(c);
            } else {
                out.append('%').append(String.format("%02X", x & 0xff));
            }
        }
        return out.toString();
    }

    // ---- http: WebDAV behind the http backend, and the file backend ----

    /** The policies' paths of the WebDAV run: fenced with COPY/MOVE, fenced without WebDAV, left unfenced. */
    static final List<String> DAV_AREAS = List.of("dav", "dav", "dav", "plain", "open");
    static final List<String> DIRS = List.of("t1", "t2");
    static final List<String> NAMES = List.of("a.txt", "b.txt", "c", "a%20b.txt");

    /** Destinations: inside and outside the policy, other hosts, spellings the request-target rules refuse. */
    static final List<String> DESTINATIONS = List.of("/dav/t1/a.txt", "/dav/t2/b.txt", "/dav/t1/c",
            "http://HOST/dav/t2/a.txt", "HTTP://HOST/dav/t1/b.txt", "/dav/t1/vict%69m.txt", "/plain/t1/a.txt",
            "/open/t1/a.txt", "http://HOST/plain/t2/b.txt", "/dav/t1/a.txt/", "/dav/t1/../t2/a.txt", "/dav/t1",
            "http://evil.example/dav/t1/a.txt", "//evil/dav/t1/a.txt", "/dav/t1/a.txt?x=1", "/dav/t1/a%2Fb",
            "dav/t1/a.txt", "/docs/a", "/docs/d/b");

    static final List<String[]> HTTP_HEADERS = List.of(
            new String[] {"Destination"},
            new String[] {"Overwrite", "T", "F", "t", "yes"},
            new String[] {"Depth", "0", "infinity", "1"},
            new String[] {"If-Match", "*"},
            new String[] {"Content-Type", "text/plain", "application/xml"},
            new String[] {"Connection", "Destination", "Overwrite", "Depth", "Fencing-Token", "X-HTTP-Method-Override",
                "If-Match"},
            new String[] {"X-HTTP-Method-Override", "DELETE", "PUT", "MOVE"},
            new String[] {"X-HTTP-Method", "DELETE"},
            new String[] {"X-Method-Override", "PUT"},
            new String[] {"X-Original-URL", "/dav/t1/a.txt", "/plain/t1/a.txt"},
            new String[] {"X-Rewrite-URL", "/dav/t2/b.txt"});
    static final List<String> HTTP_PARAMS = List.of("_method=DELETE", "%5Fmethod=PUT", "_METHOD=DELETE",
            ".method=DELETE", "_method%5B%5D=MOVE", "x=1", "method=PUT", "x=/../../t2/a.txt");

    /** Requests against the WebDAV run's three policies ({@code /dav}, {@code /plain}, {@code /open}). */
    public static Arbitrary<Request> webdav() {
        return withSeeds(MeaningGrammar::webdav, MeaningSeeds.webdav());
    }

    static Request webdav(Random random) {
        String area = pick(random, DAV_AREAS);
        String dir = pick(random, DIRS);
        String name = pick(random, NAMES);
        if (random.nextInt(5) == 0) {
            // a plain write, so that copies and moves meet files and fences of every height
            String method = random.nextInt(4) == 0 ? "DELETE" : "PUT";
            return new Builder(method, "/" + area + "/" + dir + "/" + name).target(area)
                    .body(method.equals("PUT") ? body(random, random.nextInt(1000)) : "")
                    .token(random.nextInt(5) == 0 ? Token.STALE : Token.HIGHER, random.nextInt(3))
                    .about(davResource(area, dir, name)).build();
        }
        String path = "/" + area + "/" + dir + "/" + name;
        int odd = random.nextInt(25);
        if (odd == 0) {
            path = "/" + area + "/" + dir; // no policy's path
        } else if (odd == 1) {
            path += "/";
        }
        String method = method(random, List.of("PUT", "PUT", "DELETE", "COPY", "COPY", "MOVE", "MOVE", "MKCOL",
                "GET"));
        Builder b = new Builder(method, path).target(area);
        String destination = "/" + (random.nextInt(8) == 0 ? pick(random, DAV_AREAS) : area) + "/"
                + pick(random, DIRS) + "/" + pick(random, NAMES);
        addHttpHeaders(random, b, method, random.nextBoolean() ? destination
                : random.nextBoolean() ? "http://HOST" + destination : pick(random, DESTINATIONS));
        String[] to = destination.substring(1).split("/");
        return b.body(body(random, method, random.nextInt(1000))).token(token(random), random.nextInt(3))
                .about(davResource(area, dir, name), davResource(to[0], to[1], to[2])).build();
    }

    /** Where nginx keeps a resource of the WebDAV run under its root ({@code dav} is under the base path /store). */
    public static String davResource(String area, String dir, String name) {
        return (area.equals("dav") ? "store/" : "") + area + "/" + dir + "/" + name.replace("%20", " ");
    }

    /** A body: mostly one for the methods that take one, mostly none for the others (nginx refuses a MKCOL's). */
    static String body(Random random, String method, int n) {
        boolean takes = method.equalsIgnoreCase("PUT") || method.equalsIgnoreCase("POST")
                || method.equalsIgnoreCase("PATCH");
        return takes || random.nextInt(6) == 0 ? body(random, n) : "";
    }

    private static void addHttpHeaders(Random random, Builder b, String method, String destination) {
        boolean moves = method.equalsIgnoreCase("COPY") || method.equalsIgnoreCase("MOVE");
        if (moves ? random.nextInt(12) != 0 : random.nextInt(12) == 0) {
            b.header("Destination", destination);
            if (random.nextInt(25) == 0) {
                b.header("Destination", pick(random, DESTINATIONS));
            }
        }
        int headers = random.nextInt(10) < 5 ? 0 : 1 + random.nextInt(2);
        for (int i = 0; i < headers; i++) {
            // the headers that change what WebDAV does, three times as often as the overrides the proxy refuses
            String[] h = random.nextInt(4) != 0 ? pick(random, HTTP_HEADERS.subList(1, 6))
                    : pick(random, HTTP_HEADERS.subList(6, HTTP_HEADERS.size()));
            b.header(h[0], h[1 + random.nextInt(h.length - 1)]);
        }
        if (random.nextInt(10) == 0) {
            String param = pick(random, HTTP_PARAMS);
            int eq = param.indexOf('=');
            b.param(param.substring(0, eq), param.substring(eq + 1));
        }
    }

    /** Requests against the file backend's {@code /docs/{path...}}: its table is methods only. */
    public static Arbitrary<Request> file() {
        return withSeeds(MeaningGrammar::file, MeaningSeeds.file());
    }

    static Request file(Random random) {
        String name = pick(random, "a", "b", "d/a", "d/b", "d");
        String method = method(random, List.of("PUT", "PUT", "DELETE", "COPY", "MOVE", "GET"));
        Builder b = new Builder(method, "/docs/" + name).target("docs");
        String destination = "/docs/" + pick(random, "a", "b", "d/a", "d/b");
        addHttpHeaders(random, b, method, random.nextBoolean() ? destination : pick(random, DESTINATIONS));
        return b.body(body(random, method, random.nextInt(1000))).token(token(random), random.nextInt(3))
                .about("docs/" + name).build();
    }
}
