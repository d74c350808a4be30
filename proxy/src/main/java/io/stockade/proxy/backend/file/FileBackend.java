package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.RequestTarget;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * A local directory served over HTTP: {@code GET}, {@code HEAD}, {@code PUT} and {@code DELETE} of whole files.
 * <p>
 * <b>Mapping.</b> The file is the root plus the <em>whole</em> request path, percent-decoded:
 * {@code PUT /files/a/b.txt} writes {@code <root>/files/a/b.txt}; the policy's path template does not strip a
 * prefix. Parent directories are created as needed (and never removed). The query string is ignored.
 * <p>
 * <b>Path safety.</b> Every request's raw path is checked before any file is touched (see {@link SafePath}):
 * {@code .}, {@code ..} and empty segments, encoded slashes and backslashes, NUL, names starting with
 * {@code .stockade} (reserved for the token sidecars and temp files), and symlinks that lead outside the root
 * or sit at the target are refused with 400 {@code bad-path}.
 * <p>
 * <b>Writes.</b> A PUT streams the body into a temp file in the target's directory, fsyncs it, renames it over
 * the target atomically and fsyncs the directory: a reader sees the old file or the new one, never a mix, and a
 * 2xx means the file is on disk. 201 when the file is new, 204 when it was replaced. A body cut short leaves the
 * old file as it was (400 {@code incomplete-body}). A DELETE removes the file (204, or 404 if there was none).
 * <p>
 * <b>Token sidecar.</b> A fenced write also records its token beside the data, in
 * {@code <root>/.stockade/tokens/<path>/.stockade-token} (see {@link Sidecar}), before it changes the data; a
 * fenced DELETE leaves a tombstone there. If the sidecar already holds a higher token than the admitted one (the
 * fence store was reset or lost), the write is refused as stale without touching anything. Unfenced writes
 * neither read nor write the sidecar.
 * <p>
 * <b>Reads.</b> 200 with {@code Content-Length}, {@code Content-Type: application/octet-stream}, a strong
 * {@code ETag} and {@code Last-Modified}, streamed from the file (never held in memory). The ETag is
 * {@code "<file key>-<size>-<mtime ns>"} in hex, where the file key is the inode (and device) on POSIX systems:
 * every write renames a fresh file into place, so any change of content gives a new inode, and size and mtime
 * guard against inode reuse; no content hash has to be computed over a 1 GiB file. {@code If-None-Match}
 * answers 304. A missing file is 404 {@code not-found}; so is a deleted one, as a delete removes the data file
 * (the tombstone lives only in the sidecar). Ranges are not supported (the whole file is sent).
 * <p>
 * <b>Errors.</b> A disk error (no space, I/O error, permission) is 503 {@code storage-error} with the system's
 * reason, logged here; no stack trace or server path reaches the client.
 * <p>
 * Its writes are of the serialized class ({@code Keeper.Serialized}): the engine holds the scope around each,
 * and a local write has no unknown outcome. On top of that, the sidecar check and the data change of a fenced
 * write run under a per-file lock in this backend, so the sidecar is a correct per-file fence even when two scopes
 * cover one file.
 */
public final class FileBackend implements Backend {
    private static final Logger LOG = Logger.getLogger(FileBackend.class.getName());
    private static final String ALLOWED = "GET, HEAD, PUT, DELETE";
    private static final HeaderName ALLOW = HeaderNames.create("Allow");
    private static final int BUFFER = 64 * 1024;
    private static final int STRIPES = 256;
    /** Linux's PATH_MAX less its terminating NUL. */
    private static final int PATH_MAX = 4095;
    /** Room for "/" + the sidecar's file name, or a temp file's name, after the path. */
    private static final int SIDECAR_AND_TEMP_BYTES = 64;
    private static final DateTimeFormatter HTTP_DATE = DateTimeFormatter.RFC_1123_DATE_TIME.withZone(ZoneOffset.UTC);

    private final Path root;
    private final Path tokens;
    /**
     * The most bytes a request's decoded path may have: Linux takes paths of at most 4095 bytes, and the longest
     * path the backend opens for a request is its token sidecar, {@code <tokens>/<path>/.stockade-token}, or a
     * temp file beside the data ({@code .stockade-tmp-} and a random suffix).
     */
    private final int maxPathBytes;
    private final ReentrantLock[] locks = new ReentrantLock[STRIPES];

    private FileBackend(Path root, Path tokens) {
        this.root = root;
        this.tokens = tokens;
        this.maxPathBytes = PATH_MAX - tokens.toString().getBytes(StandardCharsets.UTF_8).length
                - SIDECAR_AND_TEMP_BYTES;
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
        }
    }

    /**
     * Opens the directory of a file backend, creating it (and its sidecar tree) if missing.
     *
     * @throws IOException if the directory cannot be created or is not a directory
     */
    public static FileBackend open(BackendConfig.File config) throws IOException {
        Objects.requireNonNull(config, "config");
        Path dir = config.root().toAbsolutePath().normalize();
        Files.createDirectories(dir);
        Path real = dir.toRealPath();
        if (!Files.isDirectory(real)) {
            throw new IOException("file backend root is not a directory: " + dir);
        }
        Path tokens = real.resolve(SafePath.RESERVED_PREFIX).resolve("tokens");
        Files.createDirectories(tokens);
        FileBackend backend = new FileBackend(real, tokens);
        Thread.ofVirtual().name("stockade-file-sweep").start(() -> sweepTempFiles(real,
                FileTime.from(Instant.now())));
        return backend;
    }

    /**
     * Removes the temp files a crash ({@code kill -9}, power loss) left behind: {@code .stockade-tmp-*} files last
     * modified before this backend opened, anywhere under the root (the data tree and the sidecar tree). No
     * request can name them, and none of them can belong to a write in progress of this process. Runs in the
     * background at start; a tree it cannot read is logged and left alone.
     *
     * @return how many were removed
     */
    static int sweepTempFiles(Path root, FileTime openedAt) {
        String prefix = SafePath.RESERVED_PREFIX + "-tmp-";
        int[] removed = {0};
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                    if (attrs.isRegularFile() && file.getFileName().toString().startsWith(prefix)
                            && attrs.lastModifiedTime().compareTo(openedAt) < 0) {
                        try {
                            Files.deleteIfExists(file);
                            removed[0]++;
                        } catch (IOException e) {
                            LOG.log(Level.WARNING, "could not remove the crash leftover " + root.relativize(file), e);
                        }
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    LOG.log(Level.WARNING, "cannot look for crash leftovers in " + root.relativize(file), e);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot look for crash leftovers under " + root, e);
        }
        if (removed[0] > 0) {
            LOG.info("file backend " + root + ": removed " + removed[0] + " temp file(s) left by an earlier crash");
        }
        return removed[0];
    }

    /** The root's real path. */
    public Path root() {
        return root;
    }

    /**
     * The file backend's closed table: {@code GET} and {@code HEAD} read the file, {@code PUT} and {@code DELETE}
     * write it (fenced on the request's scope, serialized); any other method is 405. The path must name a file
     * under the root that the file system can take, reached through no symbolic link that leaves the root; a
     * write where a directory stands is 409. All of it is checked here, before any fence question, so a refusal
     * never raises a fence. The file found is what the plan's actions act on.
     */
    @Override
    public Plan plan(Exchange exchange) {
        String method = exchange.request().prologue().method().text();
        String scope = exchange.scope();
        boolean write = method.equals("PUT") || method.equals("DELETE");
        if (!write && !method.equals("GET") && !method.equals("HEAD")) {
            return new Plan.Refuse(scope, Problem.of(ProblemType.METHOD_NOT_ALLOWED, "the file backend takes "
                    + ALLOWED + ", not " + method).header(ALLOW.defaultCase(), ALLOWED));
        }
        SafePath.Located target;
        try {
            RequestTarget requested = Objects.requireNonNull(exchange.route().target(),
                    "a planned request's route has a target (only a refusal's has none)");
            target = SafePath.locate(root, SafePath.check(requested.segments(), maxPathBytes));
        } catch (SafePath.TooLongException e) {
            return new Plan.Refuse(scope, Problem.of(ProblemType.PATH_TOO_LONG,
                    Objects.requireNonNullElse(e.getMessage(), "the path is too long")));
        } catch (SafePath.BadPathException e) {
            return new Plan.Refuse(scope, badPath(e));
        } catch (IOException e) {
            return new Plan.Refuse(scope, storageError("resolving the path", e));
        }
        if (!write) {
            boolean head = method.equals("HEAD");
            return new Plan.Forward(scope, ex -> answering(() -> {
                read(ex.request(), ex.response(), target.file(), head);
                return new WriteResult.Answered(ex.response().status().code());
            }));
        }
        if (!fileCanBeThere(target.file())) {
            // Checked again under the file's lock when the write runs; checking here too means the common case is
            // refused before the fence (only a directory created meanwhile by a write of another scope can still
            // make a fenced write fail with 409 after its token was admitted).
            return new Plan.Refuse(scope, notAFile(target.file()).problem);
        }
        boolean put = method.equals("PUT");
        Plan.Action unfenced = ex -> answering(() -> put ? put(ex, target, null) : delete(ex.response(), target, null));
        if (!exchange.fencing().fencesMethod(method)) {
            return new Plan.Forward(scope, Plan.Unfenced.NOT_FENCED, unfenced);
        }
        return exchange.fencing().plan(method, List.of(scope), Backend.headerToken(exchange),
                new Keeper.Serialized((ex, admission) -> answering(() -> {
                    Fence fence = new Fence(admission.token(), admission.rule().acceptEqual());
                    return put ? put(ex, target, fence) : delete(ex.response(), target, fence);
                })), unfenced);
    }

    /** Runs a step that may refuse; a refusal is the pipeline's to answer. */
    private static WriteResult answering(Step step) {
        try {
            return step.run();
        } catch (Refusal r) {
            return new WriteResult.Refused(r.problem);
        }
    }

    @FunctionalInterface
    private interface Step {
        WriteResult run() throws Refusal;
    }

    @Override
    public void close() {
        // Nothing is held open between requests.
    }

    // ---------------------------------------------------------------------------------------------------------

    /** The token of a fenced write and whether the policy accepts a token equal to the highest. */
    private record Fence(long token, boolean acceptEqual) {
        boolean staleAgainst(Sidecar sidecar) {
            return FenceRule.stale(token, sidecar.token(), acceptEqual);
        }
    }

    /** A problem to answer instead of going on. */
    private static final class Refusal extends Exception {
        final Problem problem;

        Refusal(Problem problem) {
            super(problem.detail(), null, false, false);
            this.problem = problem;
        }
    }

    private static Problem badPath(SafePath.BadPathException e) {
        return Problem.of(ProblemType.BAD_PATH, Objects.requireNonNullElse(e.getMessage(), "a bad path"));
    }

    private void read(ServerRequest req, ServerResponse res, Path file, boolean head) throws Refusal {
        // Stat, open, stat again: if the file was replaced in between, the ETag would describe another file.
        for (int attempt = 0; ; attempt++) {
            FileChannel ch;
            BasicFileAttributes attrs;
            try {
                attrs = attributes(file);
                if (attrs == null || !attrs.isRegularFile()) {
                    throw notFound(file);
                }
                ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                throw notFound(file);
            } catch (IOException e) {
                throw new Refusal(storageError("opening " + relative(file), e));
            }
            try (ch) {
                BasicFileAttributes after = attributes(file);
                if (after == null || !Objects.equals(after.fileKey(), attrs.fileKey())
                        || after.lastModifiedTime().compareTo(attrs.lastModifiedTime()) != 0
                        || ch.size() != attrs.size()) {
                    if (attempt < 3) {
                        continue;
                    }
                    throw new Refusal(Problem.of(ProblemType.STORAGE_ERROR, "the file keeps changing while being"
                            + " opened; try again"));
                }
                send(req, res, ch, attrs, head);
                return;
            } catch (IOException e) {
                throw new Refusal(storageError("reading " + relative(file), e));
            }
        }
    }

    private void send(ServerRequest req, ServerResponse res, FileChannel ch, BasicFileAttributes attrs,
                      boolean head) throws IOException {
        String etag = etag(attrs);
        res.header(HeaderNames.ETAG, etag);
        res.header(HeaderNames.LAST_MODIFIED, HTTP_DATE.format(attrs.lastModifiedTime().toInstant()));
        if (matches(req.headers().value(HeaderNames.IF_NONE_MATCH).orElse(null), etag)) {
            res.status(Status.NOT_MODIFIED_304);
            res.send();
            return;
        }
        res.status(Status.OK_200);
        res.header(HeaderNames.CONTENT_TYPE, "application/octet-stream");
        res.contentLength(attrs.size());
        if (head) {
            res.send();
            return;
        }
        ByteBuffer buf = ByteBuffer.allocate(BUFFER);
        long left = attrs.size();
        OutputStream out = res.outputStream();
        try {
            while (left > 0) {
                buf.clear();
                if (buf.capacity() > left) {
                    buf.limit((int) left);
                }
                int n = ch.read(buf); // an IOException here is a disk error: it ends the answer, below
                if (n < 0) {
                    throw new IOException("file shrank while being sent");
                }
                try {
                    out.write(buf.array(), 0, n);
                } catch (IOException | UncheckedIOException e) {
                    LOG.log(Level.FINE, "client went away during a download", e);
                    return;
                }
                left -= n;
            }
            out.close();
        } catch (IOException e) {
            // Headers are gone: all that is left is to cut the connection so the client sees a short body.
            LOG.log(Level.WARNING, "file backend: reading failed mid-answer", e);
            throw new UncheckedIOException(e);
        }
    }

    private WriteResult put(Exchange exchange, SafePath.Located target, @Nullable Fence fence)
            throws Refusal {
        ServerResponse res = exchange.response();
        Path file = target.file();
        Path sidecarFile = Sidecar.location(tokens, target.relative());
        try {
            if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
                throw notAFile(file);
            }
            if (fence != null) {
                // Cheap early check, so a stale writer's gigabyte is not uploaded for nothing.
                Sidecar sidecar = Sidecar.read(sidecarFile);
                if (sidecar != null && fence.staleAgainst(sidecar)) {
                    return new WriteResult.Stale(sidecar.token());
                }
            }
            Durable.createDirectories(Durable.parent(file));
        } catch (Durable.NotADirectoryException e) {
            throw notAFile(file);
        } catch (IOException e) {
            throw new Refusal(storageError("preparing " + relative(file), e));
        }

        Path tmp = file.resolveSibling(SafePath.RESERVED_PREFIX + "-tmp-" + UUID.randomUUID());
        try {
            receive(exchange, tmp);
        } catch (IncompleteBody e) {
            deleteQuietly(tmp);
            LOG.log(Level.FINE, "file backend: body cut short for " + relative(file), e.getCause());
            BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
            if (refused != null) {
                return new WriteResult.Answered(refused.problem().status()); // the pipeline answers a bound's refusal
            }
            return new WriteResult.Refused(Problem.of(ProblemType.INCOMPLETE_BODY, "the request body ended early or"
                    + " could not be read; nothing was written"));
        } catch (IOException e) {
            deleteQuietly(tmp);
            throw new Refusal(storageError("writing " + relative(file), e));
        }

        int status;
        ReentrantLock lock = lockFor(target);
        lock.lock();
        try {
            boolean existed = Files.exists(file, LinkOption.NOFOLLOW_LINKS);
            if (existed && !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
                deleteQuietly(tmp);
                throw notAFile(file); // a directory (or a link) appeared meanwhile
            }
            if (fence != null) {
                Sidecar sidecar = Sidecar.read(sidecarFile);
                if (sidecar != null && fence.staleAgainst(sidecar)) {
                    deleteQuietly(tmp);
                    return new WriteResult.Stale(sidecar.token());
                }
                // Sidecar first, then data. A crash between the two leaves the sidecar ahead of the data: the
                // fence is raised for a write that never happened, which only refuses lower tokens, as the
                // fence store already does. The other order could leave new data under an old token, which a
                // reset store would then let a zombie overwrite.
                new Sidecar(fence.token(), false).write(sidecarFile);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            Durable.syncDirectory(Durable.parent(file));
            status = existed ? 204 : 201;
        } catch (IOException e) {
            deleteQuietly(tmp);
            throw new Refusal(storageError("replacing " + relative(file), e));
        } finally {
            lock.unlock();
        }
        res.status(Status.create(status));
        res.send();
        return new WriteResult.Answered(status);
    }

    private WriteResult delete(ServerResponse res, SafePath.Located target, @Nullable Fence fence) throws Refusal {
        Path file = target.file();
        boolean existed;
        ReentrantLock lock = lockFor(target);
        lock.lock();
        try {
            if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
                throw notAFile(file);
            }
            if (fence != null) {
                Path sidecarFile = Sidecar.location(tokens, target.relative());
                Sidecar sidecar = Sidecar.read(sidecarFile);
                if (sidecar != null && fence.staleAgainst(sidecar)) {
                    return new WriteResult.Stale(sidecar.token());
                }
                // The tombstone goes first and stays even if there is no file: a delete does not erase the fence.
                new Sidecar(fence.token(), true).write(sidecarFile);
            }
            existed = Files.deleteIfExists(file); // removes a link itself, never its target
            if (existed) {
                Durable.syncDirectory(Durable.parent(file));
            }
        } catch (IOException e) {
            throw new Refusal(storageError("deleting " + relative(file), e));
        } finally {
            lock.unlock();
        }
        if (!existed) {
            throw notFound(file);
        }
        res.status(Status.NO_CONTENT_204);
        res.send();
        return new WriteResult.Answered(204);
    }

    /** Streams the request body into a new file and fsyncs it. */
    private static void receive(Exchange exchange, Path tmp) throws IOException, IncompleteBody {
        try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            InputStream in;
            try {
                in = exchange.body();
            } catch (RuntimeException e) {
                throw new IncompleteBody(e);
            }
            byte[] buf = new byte[BUFFER];
            while (true) {
                int n;
                try {
                    n = in.read(buf);
                } catch (IOException | RuntimeException e) {
                    // Helidon reports a short body as an unchecked exception; either way it is the client's side.
                    throw new IncompleteBody(e);
                }
                if (n < 0) {
                    break;
                }
                ByteBuffer bb = ByteBuffer.wrap(buf, 0, n);
                while (bb.hasRemaining()) {
                    out.write(bb);
                }
            }
            out.force(true);
        }
    }

    /** The client's body could not be read to its end. */
    private static final class IncompleteBody extends Exception {
        IncompleteBody(Throwable cause) {
            super(cause);
        }
    }

    private ReentrantLock lockFor(SafePath.Located target) {
        return locks[Math.floorMod(target.relative().hashCode(), STRIPES)];
    }

    private static @Nullable BasicFileAttributes attributes(Path file) throws IOException {
        try {
            return Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    /** A strong ETag: file key (inode), size and modification time, in hex. */
    static String etag(BasicFileAttributes attrs) {
        Object key = attrs.fileKey(); // (dev, inode) on POSIX; hashed, so the ETag does not show it
        long k = 0xcbf29ce484222325L;
        for (char c : String.valueOf(key).toCharArray()) {
            k = (k ^ c) * 0x100000001b3L;
        }
        Instant t = attrs.lastModifiedTime().toInstant();
        long nanos = t.getEpochSecond() * 1_000_000_000L + t.getNano();
        return "\"" + Long.toHexString(k) + "-" + Long.toHexString(attrs.size()) + "-"
                + Long.toHexString(nanos) + "\"";
    }

    private static boolean matches(@Nullable String ifNoneMatch, String etag) {
        if (ifNoneMatch == null) {
            return false;
        }
        for (String candidate : ifNoneMatch.split(",", -1)) {
            String c = candidate.trim();
            if (c.startsWith("W/")) {
                c = c.substring(2);
            }
            if (c.equals("*") || c.equals(etag)) {
                return true;
            }
        }
        return false;
    }

    private String relative(Path file) {
        return "/" + root.relativize(file);
    }

    private Refusal notFound(Path file) {
        return new Refusal(Problem.of(ProblemType.NOT_FOUND, "no file at " + relative(file)));
    }

    /** Whether a file may be written (or deleted) at {@code file}: it is no directory, and no file blocks its way. */
    private boolean fileCanBeThere(Path file) {
        if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        for (Path p = file.getParent(); p != null && p.startsWith(root) && !p.equals(root); p = p.getParent()) {
            if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                return Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS);
            }
        }
        return true;
    }

    private Refusal notAFile(Path file) {
        return new Refusal(Problem.of(ProblemType.NOT_A_FILE, relative(file) + " is a directory, or a file stands"
                + " where a directory is needed"));
    }

    /** Logs a disk error and words it for the client: the system's reason, no stack trace, no server path. */
    private Problem storageError(String doing, IOException e) {
        LOG.log(Level.WARNING, "file backend: storage error " + doing, e);
        String reason = e instanceof FileSystemException fse ? fse.getReason() : e.getMessage();
        if (reason == null) {
            reason = e.getClass().getSimpleName();
        }
        return Problem.of(ProblemType.STORAGE_ERROR, "the file store failed " + doing + ": " + reason);
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "file backend: could not delete temp file " + p, e);
        }
    }

    @Override
    public String toString() {
        return "FileBackend[" + root + "]";
    }
}
