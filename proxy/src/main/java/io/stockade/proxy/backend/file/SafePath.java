package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Turns a raw request path into a file under the root, or refuses it.
 * <p>
 * Two steps. {@link #parse} is pure string work on the raw (still percent-encoded) path and touches no file:
 * it refuses encoded slashes and backslashes, empty, {@code .} and {@code ..} segments, malformed
 * percent-encoding or UTF-8, NUL and backslash after decoding, over-long segments and the reserved names.
 * {@link #locate} then looks at the file system: it finds the deepest ancestor of the target that exists,
 * resolves its real path (following any symlinks) and refuses the request unless that real path is inside the
 * root's real path and outside the reserved {@code .stockade} tree; it refuses a symlink at the target itself.
 * The file then used is the real ancestor plus the segments that do not exist yet, so two names for the same
 * file (through a symlink that stays inside the root) share one file and one token sidecar.
 * <p>
 * The check and the later open are not one atomic step: someone with write access to the root's directory
 * tree could swap a directory for a symlink in between. That person is outside the threat model (they can
 * write the files directly); the HTTP clients, who are inside it, cannot create symlinks.
 */
final class SafePath {
    /** Names starting with this (any case) are reserved: the sidecar tree, temp files. */
    static final String RESERVED_PREFIX = ".stockade";
    /** Most file systems refuse longer names; better a 400 than a storage error. */
    private static final int MAX_SEGMENT_BYTES = 255;

    private SafePath() {
    }

    /** A refused path; the message says why, for the client. */
    static final class BadPathException extends Exception {
        BadPathException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A path the request names, checked by {@link #locate}.
     *
     * @param file     the data file (absolute, under the root's real path, no symlink on the way)
     * @param relative the file relative to the root's real path: the key of its token sidecar
     */
    record Located(Path file, Path relative) {
    }

    /**
     * Checks the raw request path and decodes it into segments. Touches no file.
     *
     * @param rawPath the path as the client sent it (no query)
     * @return the decoded segments, at least one
     */
    static List<String> parse(String rawPath) throws BadPathException {
        if (rawPath == null || !rawPath.startsWith("/")) {
            throw new BadPathException("the path must start with '/'");
        }
        if (rawPath.indexOf('\\') >= 0) {
            throw new BadPathException("the path contains a backslash");
        }
        String lower = rawPath.toLowerCase(Locale.ROOT);
        if (lower.contains("%2f")) {
            throw new BadPathException("the path contains an encoded slash (%2F)");
        }
        if (lower.contains("%5c")) {
            throw new BadPathException("the path contains an encoded backslash (%5C)");
        }
        if (rawPath.length() == 1) {
            throw new BadPathException("the path names no file");
        }
        String[] raw = rawPath.substring(1).split("/", -1);
        List<String> segments = new ArrayList<>(raw.length);
        for (String r : raw) {
            if (r.isEmpty()) {
                throw new BadPathException("the path has an empty segment ('//' or a trailing '/')");
            }
            String s = decode(r);
            if (s.equals(".") || s.equals("..")) {
                throw new BadPathException("the path has a '" + s + "' segment");
            }
            if (s.indexOf('\0') >= 0) {
                throw new BadPathException("the path contains a NUL character");
            }
            if (s.indexOf('\\') >= 0) {
                throw new BadPathException("the path contains a backslash");
            }
            if (s.toLowerCase(Locale.ROOT).startsWith(RESERVED_PREFIX)) {
                throw new BadPathException("names starting with '" + RESERVED_PREFIX + "' are reserved");
            }
            if (s.getBytes(StandardCharsets.UTF_8).length > MAX_SEGMENT_BYTES) {
                throw new BadPathException("a path segment is longer than " + MAX_SEGMENT_BYTES + " bytes");
            }
            segments.add(s);
        }
        return segments;
    }

    /**
     * Finds the file the segments name under {@code realRoot}, refusing symlinks that leave the root, lead into
     * the reserved tree, or sit at the target.
     *
     * @param realRoot the root's real path
     * @param segments from {@link #parse}
     * @throws IOException when the file system cannot be read (a storage error, not the client's fault)
     */
    static Located locate(Path realRoot, List<String> segments) throws BadPathException, IOException {
        Path target = realRoot;
        for (String s : segments) {
            target = target.resolve(s);
        }
        if (!target.normalize().equals(target) || !target.startsWith(realRoot) || target.equals(realRoot)) {
            // Cannot happen after parse(); kept so that a future change to parse() fails closed.
            throw new BadPathException("the path does not name a file under the root");
        }
        if (Files.isSymbolicLink(target)) {
            throw new BadPathException("the target is a symbolic link");
        }
        // The deepest ancestor that exists (a dangling symlink counts as existing, and fails below).
        Path ancestor = target.getParent();
        int missing = 1;
        while (!ancestor.equals(realRoot) && !Files.exists(ancestor, LinkOption.NOFOLLOW_LINKS)) {
            ancestor = ancestor.getParent();
            missing++;
        }
        Path real;
        try {
            real = ancestor.toRealPath();
        } catch (java.nio.file.NoSuchFileException e) {
            throw new BadPathException("a path component is a dangling symbolic link");
        }
        if (!real.startsWith(realRoot)) {
            throw new BadPathException("a symbolic link on the path leads outside the root");
        }
        Path file = real;
        for (int i = segments.size() - missing; i < segments.size(); i++) {
            file = file.resolve(segments.get(i));
        }
        Path relative = realRoot.relativize(file);
        if (relative.getNameCount() == 0 || relative.toString().isEmpty()) {
            throw new BadPathException("a symbolic link on the path leads to the root itself");
        }
        for (Path name : relative) {
            if (name.toString().toLowerCase(Locale.ROOT).startsWith(RESERVED_PREFIX)) {
                throw new BadPathException("a symbolic link on the path leads into the reserved '"
                        + RESERVED_PREFIX + "' tree");
            }
        }
        if (!file.equals(target) && Files.isSymbolicLink(file)) {
            throw new BadPathException("the target is a symbolic link");
        }
        return new Located(file, relative);
    }

    /** Strict percent-decoding of one segment: '+' stays '+', bad escapes and bad UTF-8 are refused. */
    private static String decode(String segment) throws BadPathException {
        if (segment.indexOf('%') < 0) {
            return segment;
        }
        ByteBuffer bytes = ByteBuffer.allocate(segment.length() * 4);
        for (int i = 0; i < segment.length(); ) {
            char c = segment.charAt(i);
            if (c == '%') {
                if (i + 3 > segment.length()) {
                    throw new BadPathException("the path has a truncated percent-escape");
                }
                int hi = Character.digit(segment.charAt(i + 1), 16);
                int lo = Character.digit(segment.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new BadPathException("the path has a malformed percent-escape");
                }
                bytes.put((byte) (hi << 4 | lo));
                i += 3;
            } else if (c < 0x80) {
                bytes.put((byte) c);
                i++;
            } else {
                int cp = segment.codePointAt(i);
                bytes.put(new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8));
                i += Character.charCount(cp);
            }
        }
        bytes.flip();
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            return decoder.decode(bytes).toString();
        } catch (CharacterCodingException e) {
            throw new BadPathException("the path is not valid UTF-8 once decoded");
        }
    }
}
