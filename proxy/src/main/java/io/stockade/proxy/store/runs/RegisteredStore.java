package io.stockade.proxy.store.runs;

import java.util.Optional;

import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;

import org.jspecify.annotations.Nullable;

/**
 * A shared store that admits no token before this run is recorded in it ({@link SharedRuns}): a run that crashed
 * unrecorded would leave writes in flight that no later start waits for. Reads and version records pass.
 */
public final class RegisteredStore implements FenceStore {
    private final FenceStore delegate;
    private final SharedRuns runs;

    public RegisteredStore(FenceStore delegate, SharedRuns runs) {
        this.delegate = delegate;
        this.runs = runs;
    }

    public FenceStore delegate() {
        return delegate;
    }

    public SharedRuns runs() {
        return runs;
    }

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        if (!runs.registered()) {
            throw new StoreUnavailableException(runs.notRegisteredBecause() + " (this replica has not recorded its run"
                    + " in the fence store yet; no token is admitted before it is)");
        }
        return delegate.advance(scope, token, acceptEqual);
    }

    @Override
    public Optional<FenceState> get(String scope) throws StoreUnavailableException {
        return delegate.get(scope);
    }

    @Override
    public boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException {
        return delegate.recordVersion(scope, token, version);
    }

    @Override
    public void close() {
        runs.close();
        delegate.close();
    }
}
