package io.stockade.proxy.backend.s3;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.WriteResult;

/**
 * The <em>serialized</em> S3 class (a prefix scope, or an upstream without conditional writes): the engine's store
 * keeps the high-water mark and the engine holds the scope while {@link #write} sends the request as it is, the
 * admitted token in the object's metadata. {@link AtomicClass} is the <em>atomic</em> class; {@link S3Backend}
 * holds one of the two.
 */
final class SerializedClass implements S3Class {
    private final BackendConfig.S3 config;
    private final Relay relay;
    private final Multipart multipart;

    SerializedClass(BackendConfig.S3 config, Relay relay, Multipart multipart) {
        this.config = config;
        this.relay = relay;
        this.multipart = multipart;
    }

    /**
     * Who keeps the fence of a write: the proxy's store, the scopes held while the request is relayed; an upload's
     * part or abort is admitted without holding the scope (parts go up side by side; they change no object until
     * the completion, which is held).
     */
    @Override
    public Keeper keeper(AdmittedRequest p) {
        return switch (p.s3().admittedOperation()) {
            case UPLOAD_PART, ABORT_MULTIPART -> new Keeper.Step((exchange, admission) -> relay.forwardAsIs(exchange,
                    p));
            case DELETE_OBJECTS -> new Keeper.Serialized((exchange, admission) -> relay.relayAdmitted(exchange, p,
                    List.of()));
            case LIST_BUCKETS, BUCKET_READ, LIST_OBJECTS, LIST_OBJECT_VERSIONS, BUCKET_WRITE, DELETE_BUCKET,
                 POST_OBJECT, GET_OBJECT, HEAD_OBJECT, OBJECT_READ, PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT,
                 OBJECT_SUBRESOURCE_WRITE, CREATE_MULTIPART, COMPLETE_MULTIPART, LIST_PARTS, PREFLIGHT ->
                    new Keeper.Serialized((exchange, admission) -> write(exchange, p, admission));
        };
    }

    @Override
    public WriteResult forward(Exchange exchange, AdmittedRequest p) {
        return relay.forwardAsIs(exchange, p);
    }

    /** A serialized write of one object: relayed as it is, with the admitted token in the object's metadata. */
    private WriteResult write(Exchange exchange, AdmittedRequest p, Admission admission) {
        // form uploads never get here: the plan refuses them on this class, before the fence
        if (p.s3().operation() == S3Request.Operation.CREATE_MULTIPART) {
            return multipart.create(exchange, p, OptionalLong.of(admission.token()));
        }
        return relay.relayAdmitted(exchange, p, ObjectMeta.tokenRecord(admission.token()));
    }

    @Override
    public Duration settle() {
        // A write the upstream has not answered within its timeout is given as long again to land or be dropped.
        return config.timeout();
    }

    /** The proxy's store keeps every fence of this class. */
    @Override
    public boolean needsFenceStore() {
        return true;
    }

    /** Nothing beside the backend's upstream. */
    @Override
    public void close() {
        // the upstream is the backend's, closed by it
    }
}
