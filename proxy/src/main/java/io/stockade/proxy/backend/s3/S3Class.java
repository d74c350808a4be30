package io.stockade.proxy.backend.s3;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.WriteResult;

/**
 * What differs between the two classes of S3 backend, asked by the {@link S3Front} they share: the serialized class
 * ({@link SerializedS3Backend}) and the atomic class ({@link AtomicS3Backend}).
 */
interface S3Class {
    /** Who keeps the fence of a fenced write: the proxy's store (serialized), or the object's metadata (atomic). */
    Keeper keeper(S3Front.Parsed p);

    /** A request the plan forwards without a fence. */
    WriteResult forward(Exchange exchange, S3Front.Parsed p);

    /**
     * An unsigned read the store refused (403): whether the key is a tombstone that an anonymous client would be
     * told is missing. A tombstone does not carry the deleted object's ACL, so the store refuses it to anonymous
     * clients where S3 would say 404 for a deleted key, which it does when the client may list the bucket. Only
     * the atomic class writes tombstones.
     */
    boolean deletedForAnonymous(String bucket, String key);
}
