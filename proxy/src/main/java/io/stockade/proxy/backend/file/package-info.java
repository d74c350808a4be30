/**
 * The file backend: a local directory served over HTTP with {@code GET}, {@code HEAD}, {@code PUT} and
 * {@code DELETE} of whole files, fenced per file.
 *
 * <h2>Layout</h2>
 * <pre>
 * &lt;root&gt;/files/a/b.txt                              the data of PUT /files/a/b.txt (whole path, decoded)
 * &lt;root&gt;/files/a/.stockade-tmp-&lt;uuid&gt;               an upload in progress (or left by a crash)
 * &lt;root&gt;/.stockade/tokens/files/a/b.txt/.stockade-token   the token sidecar of that file
 * </pre>
 * Every name starting with {@code .stockade} (any case) is reserved: no request can name it, so a client can
 * neither read nor forge a sidecar or a temp file, and a sidecar's file name can never collide with a data
 * path's directory in the sidecar tree (after {@code DELETE /x} leaves its tombstone, {@code PUT /x/y} still
 * works). Temp files left by a crash are invisible to clients; when the backend opens, a background sweep removes
 * every {@code .stockade-tmp-*} file under the root that is older than the start.
 *
 * <h2>Path safety</h2>
 * The path comes from the request's one canonical target ({@code RequestTarget}: decoded segments, dot-segments,
 * encoded slashes and control characters already refused). In {@code admit}, before any fence question,
 * {@link io.stockade.proxy.backend.file.SafePath} checks the segments (reserved names, 255-byte names, a whole
 * path the file system can take: 414 {@code path-too-long} otherwise), then resolves the deepest existing
 * ancestor's real path and refuses anything that leaves the root, enters the reserved tree, or is a symlink at
 * the target; refusals are 400 {@code bad-path} with the reason, and none of them raises a fence.
 *
 * <h2>Durability and the order of steps</h2>
 * A PUT streams the body (never buffered whole: files may be larger than the heap) into a temp file beside the
 * target, fsyncs it, [fenced: writes the sidecar atomically and durably], renames the temp file over the target
 * ({@code ATOMIC_MOVE}) and fsyncs the directory; new directories are fsynced into their parents. A 2xx is sent
 * only after all of it. A reader sees the old file or the new one, never a partial one. A body cut short leaves
 * the old file and the sidecar as they were.
 * <p>
 * The sidecar is written <em>before</em> the data and the tombstone <em>before</em> the delete. A crash in
 * between leaves the sidecar ahead of the data: the fence is higher than the data's write, which can only
 * refuse writers the fence store refuses anyway. The opposite order could leave new data under an old token.
 *
 * <h2>The fence</h2>
 * The engine decides the fence (the backend is {@code SERIALIZED}: it holds the scope, the store is durable
 * before {@code write} runs, and a local write has no unknown outcome). The sidecar is defence in depth: it keeps
 * the token with the data, so if the fence store is reset or its journal lost, a fenced write whose token is
 * below the sidecar's (or equal, where the policy rejects equal tokens) is still answered
 * {@link io.stockade.proxy.backend.WriteResult.Stale} without touching anything. Deletes keep the token
 * (tombstones). The sidecar check and the data change run under a per-file lock, so the sidecar is a correct
 * fence per file even when two scopes cover the same file. Unfenced writes (observe/off modes, allowed
 * tokenless writes) neither read nor write sidecars.
 *
 * <h2>Answers</h2>
 * GET/HEAD 200 (or 304 on a matching {@code If-None-Match}), 404 {@code not-found}; PUT 201/204; DELETE 204 or
 * 404 {@code not-found}; other methods 405 with {@code Allow}; a directory where a file is named (or a file where
 * a directory is needed) 409 {@code not-a-file}; a cut-short body 400 {@code incomplete-body}; disk errors 503
 * {@code storage-error} with the system's reason (logged, no stack trace or server path to the client).
 * <p>
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend.file;

import org.jspecify.annotations.NullMarked;
