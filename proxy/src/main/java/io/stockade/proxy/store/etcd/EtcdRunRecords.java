package io.stockade.proxy.store.etcd;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.stockade.proxy.etcd.EtcdClients;
import io.stockade.proxy.fence.RunRecords;
import io.stockade.proxy.fence.StoreUnavailableException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;

/**
 * The registry of runs in etcd, under the store's prefix {@code P}: {@code P runs} marks it started, {@code P
 * runs/<id>} is a run's record (its value the run's settle in milliseconds; its mod revision the version a heartbeat
 * raises). Apart from the scopes ({@code P s/}) and floors ({@code P f/}), so no scope can be spelled as a record.
 */
final class EtcdRunRecords implements RunRecords {
    private final KV kv;
    private final Duration timeout;
    private final ByteSequence marker;
    private final ByteSequence runs;

    EtcdRunRecords(KV kv, String prefix, Duration timeout) {
        this.kv = kv;
        this.timeout = timeout;
        this.marker = bytes(prefix + "runs");
        this.runs = bytes(prefix + "runs/");
    }

    @Override
    public boolean exists() throws StoreUnavailableException {
        return await(kv.get(marker)).getCount() > 0;
    }

    @Override
    public Map<String, Run> list() throws StoreUnavailableException {
        Map<String, Run> found = new LinkedHashMap<>();
        for (KeyValue kvp : await(kv.get(runs, GetOption.builder()
                .withRange(EtcdFenceStore.prefixEnd(runs)).build())).getKvs()) {
            String id = kvp.getKey().toString(StandardCharsets.UTF_8).substring(runs.size());
            long settle;
            try {
                settle = Long.parseLong(kvp.getValue().toString(StandardCharsets.UTF_8).strip());
            } catch (NumberFormatException e) {
                settle = 0;
            }
            found.put(id, new Run(kvp.getModRevision(), Duration.ofMillis(settle)));
        }
        return found;
    }

    @Override
    public void beat(String run, Duration settle) throws StoreUnavailableException {
        await(kv.txn().Then(Op.put(marker, bytes("1"), PutOption.DEFAULT),
                Op.put(runs.concat(bytes(run)), bytes(Long.toString(settle.toMillis())), PutOption.DEFAULT))
                .commit());
    }

    @Override
    public void remove(String run) throws StoreUnavailableException {
        await(kv.delete(runs.concat(bytes(run))));
    }

    @Override
    public void removeIf(String run, long version) throws StoreUnavailableException {
        ByteSequence key = runs.concat(bytes(run));
        await(kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(version)))
                .Then(Op.delete(key, DeleteOption.DEFAULT)).commit());
    }

    private <T> T await(CompletableFuture<T> call) throws StoreUnavailableException {
        try {
            return call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            throw new StoreUnavailableException("etcd did not answer within " + timeout.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new StoreUnavailableException("etcd: " + EtcdClients.describe(cause), cause);
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for etcd", e);
        } catch (RuntimeException e) {
            throw new StoreUnavailableException("etcd client: " + e, e);
        }
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
