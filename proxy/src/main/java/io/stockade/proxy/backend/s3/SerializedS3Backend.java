package io.stockade.proxy.backend.s3;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.problem.Problem;

/**
 * The <em>serialized</em> S3 class (a prefix scope, or an upstream without conditional writes): the engine's store
 * keeps the high-water mark and the engine holds the scope while {@link #write} sends the request as it is, the
 * admitted token in the object's metadata. {@link AtomicS3Backend} is the <em>atomic</em> class. Both read,
 * authenticate, plan and relay requests through an {@link S3Front}.
 */
final class SerializedS3Backend implements Backend, S3Class {
    private final BackendConfig.S3 config;
    private final S3Front front;
    private final S3Planner planner;

    SerializedS3Backend(BackendConfig.S3 config) {
        this.config = config;
        this.front = new S3Front(config, this);
        this.planner = new S3Planner(config, front, this);
    }

    @Override
    public Plan plan(Exchange exchange) {
        return planner.plan(exchange);
    }

    /**
     * Who keeps the fence of a write: the proxy's store, the scopes held while the request is relayed; an upload's
     * part or abort is admitted without holding the scope (parts go up side by side; they change no object until
     * the completion, which is held).
     */
    @Override
    public Keeper keeper(S3Front.Parsed p) {
        return switch (p.s3().operation()) {
            case UPLOAD_PART, ABORT_MULTIPART -> new Keeper.Step((exchange, admission) -> front.forwardAsIs(exchange,
                    p));
            case DELETE_OBJECTS -> new Keeper.Serialized((exchange, admission) -> front.relayAdmitted(exchange, p,
                    List.of()));
            case LIST_BUCKETS, BUCKET_READ, LIST_OBJECTS, LIST_OBJECT_VERSIONS, BUCKET_WRITE, DELETE_BUCKET,
                 POST_OBJECT, GET_OBJECT, HEAD_OBJECT, OBJECT_READ, PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT,
                 OBJECT_SUBRESOURCE_WRITE, CREATE_MULTIPART, COMPLETE_MULTIPART, LIST_PARTS, PREFLIGHT ->
                    new Keeper.Serialized((exchange, admission) -> write(exchange, p, admission));
        };
    }

    @Override
    public WriteResult forward(Exchange exchange, S3Front.Parsed p) {
        return front.forwardAsIs(exchange, p);
    }

    /** A serialized write of one object: relayed as it is, with the admitted token in the object's metadata. */
    private WriteResult write(Exchange exchange, S3Front.Parsed p, Admission admission) {
        // form uploads never get here: the plan refuses them on this class, before the fence
        if (p.s3().operation() == S3Request.Operation.CREATE_MULTIPART) {
            return front.multipart.create(exchange, p, OptionalLong.of(admission.token()));
        }
        return front.relayAdmitted(exchange, p, S3Front.tokenRecord(admission.token()));
    }

    /** Only the atomic class writes tombstones. */
    @Override
    public boolean deletedForAnonymous(String bucket, String key) {
        return false;
    }

    @Override
    public Duration settle() {
        // A write the upstream has not answered within its timeout is given as long again to land or be dropped.
        return config.timeout();
    }

    /** S3 keys are exact bytes: {@code folder/} is a key of its own (a folder marker). */
    @Override
    public boolean takesTrailingSlash() {
        return true;
    }

    @Override
    public void refuse(Exchange exchange, Problem problem) {
        front.refuse(exchange, problem);
    }

    @Override
    public void checkAtStart(String policy) {
        front.checkAtStart(policy);
    }

    @Override
    public void close() {
        front.close();
    }
}
