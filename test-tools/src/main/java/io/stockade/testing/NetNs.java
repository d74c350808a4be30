package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network namespace the test makes for itself (as root) and removes at {@link #close}, joined to the test's own
 * namespace by a veth pair on a /30 of 10.231.0.0/16: a server started in it ({@link #start}) is reached at
 * {@link #address()}, and {@link #cut()} partitions it as a firewall's DROP does, both ways (a {@code pfifo} queue
 * of length 0 on each end of the pair: every packet is dropped, nothing is refused or reset; iproute2 only, no
 * iptables or netem needed), until {@link #heal()}. Connections survive the cut: what was sent in it is lost and
 * retransmitted by the kernels once it heals.
 */
public final class NetNs implements AutoCloseable {
    private static final AtomicInteger COUNT = new AtomicInteger();

    private final String name;
    private final String outside;
    private final String inside;
    private final String outsideIp;
    private final String insideIp;
    private final List<Process> processes = new ArrayList<>();
    private volatile boolean cut;

    private NetNs(String name, String outside, String inside, String outsideIp, String insideIp) {
        this.name = name;
        this.outside = outside;
        this.inside = inside;
        this.outsideIp = outsideIp;
        this.insideIp = insideIp;
    }

    /** Whether this machine lets a test make namespaces (root, {@code ip} and {@code tc}). */
    public static boolean available() {
        return "root".equals(System.getProperty("user.name")) && Tools.binary("ip").isPresent()
                && Tools.binary("tc").isPresent();
    }

    /** A new namespace with its veth pair up and addressed, its loopback up. */
    public static NetNs create() {
        long pid = ProcessHandle.current().pid() % 100_000;
        int n = COUNT.incrementAndGet();
        String name = "stk" + pid + "-" + n;
        int[] net = freeSubnet();
        String base = "10.231." + net[0] + ".";
        NetNs ns = new NetNs(name, "sk" + pid + "a" + n, "sk" + pid + "b" + n, base + (net[1] + 1),
                base + (net[1] + 2));
        try {
            run("ip", "netns", "add", name);
            run("ip", "link", "add", ns.outside, "type", "veth", "peer", "name", ns.inside);
            run("ip", "link", "set", ns.inside, "netns", name);
            run("ip", "addr", "add", ns.outsideIp + "/30", "dev", ns.outside);
            run("ip", "link", "set", ns.outside, "up");
            run("ip", "netns", "exec", name, "ip", "addr", "add", ns.insideIp + "/30", "dev", ns.inside);
            run("ip", "netns", "exec", name, "ip", "link", "set", ns.inside, "up");
            run("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up");
        } catch (IOException e) {
            ns.close();
            throw new UncheckedIOException("cannot make a network namespace", e);
        }
        return ns;
    }

    /**
     * A /30 of 10.231.0.0/16 no route of this host uses yet: its third octet and its network's last octet (random,
     * then checked against {@code ip -4 route}: two namespaces on one /30 would take each other's packets).
     */
    private static synchronized int[] freeSubnet() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try {
            String routes = output("ip", "-4", "route");
            for (int attempt = 0; attempt < 50; attempt++) {
                int[] net = {random.nextInt(256), random.nextInt(64) * 4};
                if (!routes.contains("10.231." + net[0] + "." + net[1] + "/30")) {
                    return net;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no free /30 in 10.231.0.0/16 after 50 tries");
    }

    /** The address of the namespace's end of the pair (its servers listen there). */
    public String address() {
        return insideIp;
    }

    /** The command prefix that runs a program inside the namespace: {@code ip netns exec NAME}. */
    public List<String> exec() {
        return List.of("ip", "netns", "exec", name);
    }

    /** Starts {@code command} inside the namespace, its output appended to {@code log}; stopped at close. */
    public Process start(Path log, String... command) {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", name));
        all.addAll(List.of(command));
        try {
            Process p = new ProcessBuilder(all).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            synchronized (processes) {
                processes.add(p);
            }
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + command[0] + " in " + name, e);
        }
    }

    /** Drops every packet between the namespace and the test, both ways, from now on. */
    public void cut() {
        try {
            run("tc", "qdisc", "replace", "dev", outside, "root", "pfifo", "limit", "0");
            run("ip", "netns", "exec", name, "tc", "qdisc", "replace", "dev", inside, "root", "pfifo", "limit", "0");
            cut = true;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Ends a {@link #cut()}: packets flow again (those dropped are retransmitted by the kernels). */
    public void heal() {
        try {
            runAllowing(2, "tc", "qdisc", "del", "dev", outside, "root");
            runAllowing(2, "ip", "netns", "exec", name, "tc", "qdisc", "del", "dev", inside, "root");
            cut = false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public boolean isCut() {
        return cut;
    }

    /** Stops what was started in it, removes the namespace (and with it the pair). */
    @Override
    public void close() {
        synchronized (processes) {
            for (Process p : processes) {
                p.destroy();
                try {
                    if (!p.waitFor(5, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    p.destroyForcibly();
                }
            }
        }
        try {
            runAllowing(1, "ip", "netns", "del", name);
            if (Files.exists(Path.of("/sys/class/net", outside))) {
                runAllowing(1, "ip", "link", "del", outside);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void run(String... command) throws IOException {
        runAllowing(0, command);
    }

    private static String output(String... command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            p.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        return out;
    }

    private static void runAllowing(int ok, String... command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not end within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        if (p.exitValue() != 0 && p.exitValue() != ok) {
            throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ": " + output.strip());
        }
    }
}
