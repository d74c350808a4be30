package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Turns the decoded segments of a request target into a file under the root, or refuses them.
 * <p>
 * Two steps. {@link #check} is pure string work on the decoded segments of the request's one canonical target
 * ({@code RequestTarget}, which has already refused encoded slashes and backslashes, empty, {@code .} and
 * {@code ..} segments, malformed percent-encoding or UTF-8 and control characters) and touches no file: it
 * refuses the reserved names, over-long segments and paths longer than the file system takes.
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
    static class BadPathException extends Exception {
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
     * Checks the decoded segments of a request target (already refused by {@code RequestTarget} if they hold an
     * empty, {@code .} or {@code ..} segment, a slash, a backslash or a control character; checked again here, as
     * the file system is where such a segment would do harm). Touches no file.
     *
     * @param segments the target's decoded segments
     * @param maxBytes the most bytes of UTF-8 the relative path (segments joined by '/') may have
     * @return the segments, at least one
     */
    static List<String> check(List<String> segments, int maxBytes) throws BadPathException {
        if (segments.isEmpty()) {
            throw new BadPathException("the path names no file");
        }
        int total = -1;
        for (String s : segments) {
            if (s.isEmpty() || s.equals(".") || s.equals("..") || s.indexOf('/') >= 0) {
                throw new BadPathException("the path has an empty, '.' or '..' segment");
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
            int bytes = s.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_SEGMENT_BYTES) {
                throw new BadPathException("a path segment is longer than " + MAX_SEGMENT_BYTES + " bytes");
            }
            total += bytes + 1;
        }
        if (total > maxBytes) {
            throw new TooLongException("the path is " + total + " bytes long once decoded; this file backend takes "
                    + "at most " + maxBytes + " (the file system's limit, less the backend's root and token tree)");
        }
        return segments;
    }

    /** A path longer than the file system can take under the root. */
    static final class TooLongException extends BadPathException {
        TooLongException(String message) {
            super(message);
        }
    }

    /**
     * Finds the file the segments name under {@code realRoot}, refusing symlinks that leave the root, lead into
     * the reserved tree, or sit at the target.
     *
     * @param realRoot the root's real path
     * @param segments from {@link #check}
     * @throws IOException when the file system cannot be read (a storage error, not the client's fault)
     */
    static Located locate(Path realRoot, List<String> segments) throws BadPathException, IOException {
        Path target = realRoot;
        for (String s : segments) {
            target = target.resolve(s);
        }
        if (!target.normalize().equals(target) || !target.startsWith(realRoot) || target.equals(realRoot)) {
            // Cannot happen after check(); kept so that a future change to check() fails closed.
            throw new BadPathException("the path does not name a file under the root");
        }
        if (Files.isSymbolicLink(target)) {
            throw new BadPathException("the target is a symbolic link");
        }
        // The deepest ancestor that exists (a dangling symlink counts as existing, and fails below).
        Path ancestor = Durable.parent(target);
        int missing = 1;
        while (!ancestor.equals(realRoot) && !Files.exists(ancestor, LinkOption.NOFOLLOW_LINKS)) {
            ancestor = Durable.parent(ancestor);
            missing++;
        }
        Path real;
        try {
            real = ancestor.toRealPath();
        } catch (NoSuchFileException e) {
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
}
