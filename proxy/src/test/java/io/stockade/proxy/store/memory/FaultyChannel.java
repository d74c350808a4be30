package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** A real file channel whose writes and forces can be made to fail or stall on demand. */
final class FaultyChannel extends FileChannel {

    /** Switches shared by every channel an opener made. */
    static final class Faults implements Journal.ChannelOpener {
        volatile boolean failForce;
        volatile boolean failWrite;
        /** When set, force() waits for it (up to 30 s) before forcing. */
        volatile CountDownLatch forceGate;
        /** Counted down when a force() starts waiting at the gate. */
        volatile CountDownLatch forceArrived = new CountDownLatch(1);

        @Override
        public FileChannel open(Path path, OpenOption... options) throws IOException {
            return new FaultyChannel(FileChannel.open(path, options), this);
        }
    }

    private final FileChannel real;
    private final Faults faults;

    FaultyChannel(FileChannel real, Faults faults) {
        this.real = real;
        this.faults = faults;
    }

    @Override
    public void force(boolean metaData) throws IOException {
        CountDownLatch gate = faults.forceGate;
        if (gate != null) {
            faults.forceArrived.countDown();
            try {
                if (!gate.await(30, TimeUnit.SECONDS)) {
                    throw new IOException("test gate never opened");
                }
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
        }
        if (faults.failForce) {
            throw new IOException("injected fsync failure (EIO)");
        }
        real.force(metaData);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        if (faults.failWrite) {
            throw new IOException("injected write failure (ENOSPC)");
        }
        return real.write(src);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        if (faults.failWrite) {
            throw new IOException("injected write failure (ENOSPC)");
        }
        return real.write(srcs, offset, length);
    }

    @Override
    public int write(ByteBuffer src, long position) throws IOException {
        if (faults.failWrite) {
            throw new IOException("injected write failure (ENOSPC)");
        }
        return real.write(src, position);
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        return real.read(dst);
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        return real.read(dsts, offset, length);
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        return real.read(dst, position);
    }

    @Override
    public long position() throws IOException {
        return real.position();
    }

    @Override
    public FileChannel position(long newPosition) throws IOException {
        real.position(newPosition);
        return this;
    }

    @Override
    public long size() throws IOException {
        return real.size();
    }

    @Override
    public FileChannel truncate(long size) throws IOException {
        real.truncate(size);
        return this;
    }

    @Override
    public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
        return real.transferTo(position, count, target);
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
        return real.transferFrom(src, position, count);
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
        return real.map(mode, position, size);
    }

    @Override
    public FileLock lock(long position, long size, boolean shared) throws IOException {
        return real.lock(position, size, shared);
    }

    @Override
    public FileLock tryLock(long position, long size, boolean shared) throws IOException {
        return real.tryLock(position, size, shared);
    }

    @Override
    protected void implCloseChannel() throws IOException {
        real.close();
    }
}
