/**
 * The S3 backend ({@code type: s3}): unmodified S3 clients (AWS SDKs with default settings, presigned URLs) talk
 * to the proxy as to S3; the proxy checks their SigV4 signatures ({@link io.stockade.proxy.backend.s3.ClientAuth}),
 * decodes aws-chunked bodies while checking chunk signatures and trailing checksums
 * ({@link io.stockade.proxy.backend.s3.PayloadReader}), signs its own upstream requests
 * ({@link io.stockade.proxy.backend.s3.Upstream}, {@link io.stockade.proxy.backend.s3.SigV4}) and answers every
 * refusal as an S3 XML error. What it forwards is a closed table ({@link io.stockade.proxy.backend.s3.S3Table}):
 * every (method, target, query parameters, significant header) it forwards is a row, anything else is refused.
 * <p>
 * One backend, {@link io.stockade.proxy.backend.s3.S3Backend}, holding its class as a strategy
 * ({@link io.stockade.proxy.backend.s3.S3Class}; {@link io.stockade.proxy.backend.s3.S3Type#open()} makes it):
 * {@link io.stockade.proxy.backend.s3.AtomicClass} (<em>atomic</em>: one scope per object, the highest token in
 * the object's metadata ({@link io.stockade.proxy.backend.s3.ObjectMeta}), writes conditional on the ETag it was
 * read from ({@link io.stockade.proxy.backend.s3.ConditionalWrite}; a copy's:
 * {@link io.stockade.proxy.backend.s3.ConditionalCopy}; with the per-endpoint locks and ETag cache of
 * {@link io.stockade.proxy.backend.s3.EndpointWrites}), deletes leave a tombstone) or
 * {@link io.stockade.proxy.backend.s3.SerializedClass} (<em>serialized</em>: a prefix scope or an upstream
 * without conditional writes; the engine's store and scope guard do the fencing). A request goes one way:
 * {@link io.stockade.proxy.backend.s3.S3Admission} says what is accepted and why the rest is refused (browser forms:
 * {@link io.stockade.proxy.backend.s3.FormAdmission}; the token's carriers:
 * {@link io.stockade.proxy.backend.s3.S3Tokens}), {@link io.stockade.proxy.backend.s3.S3Planner} makes the fence plan
 * of each operation (scopes: {@link io.stockade.proxy.backend.s3.KeyScopes}), asking the class who keeps the fence,
 * and the class writes through {@link io.stockade.proxy.backend.s3.Relay} to the store, a failed call mapped by
 * {@link io.stockade.proxy.backend.s3.S3Failures}; refusals are answered by
 * {@link io.stockade.proxy.backend.s3.S3Refusals}. The atomic class's tombstones are hidden from listings and reads
 * by {@link io.stockade.proxy.backend.s3.Tombstones}. See docs/s3.md.
 * <p>
 * What real tools need besides (S3 as real tools use it): {@link io.stockade.proxy.backend.s3.Listings} cuts tombstones
 * out of
 * listings; {@link io.stockade.proxy.backend.s3.PostForm}, {@link io.stockade.proxy.backend.s3.PostPolicy} and
 * {@link io.stockade.proxy.backend.s3.Spool} read, judge and hold browser-form uploads (POST Object),
 * {@link io.stockade.proxy.backend.s3.FormUploads} writes and answers them;
 * {@link io.stockade.proxy.backend.s3.Multipart} lets each step of a multipart upload name only an upload the proxy
 * handed out ({@link io.stockade.proxy.backend.s3.UploadIds}: created with its token, or listed).
 * <p>
 * Depends only on {@code io.stockade.proxy.backend}, {@code fence.ScopeGuard}, {@code http.Problem},
 * {@code token.FencingToken}, {@code upstream} (the proxy's own HTTP client) and the policy model.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend.s3;

import org.jspecify.annotations.NullMarked;
