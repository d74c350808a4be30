package io.stockade.conformance.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * Sends POSIX signals through one long-lived {@code sh}, whose {@code kill} is a builtin: no process is started per
 * signal. A SIGSTOP must land in the writer's window between its lease check and its write (its {@code --work-ms},
 * 100 ms); starting {@code kill} from this JVM for each signal took long enough on a loaded machine that the writer
 * had sent its write before it stopped, and the control of the pause scenario then saw no stale write (a CI run,
 * 2026-12-03). {@link #send} returns once the signal was sent.
 */
final class Signals implements AutoCloseable {
    private final Process shell;
    private final Writer commands;
    private final BufferedReader answers;

    private Signals(Process shell) {
        this.shell = shell;
        this.commands = new OutputStreamWriter(shell.getOutputStream(), StandardCharsets.US_ASCII);
        this.answers = new BufferedReader(new InputStreamReader(shell.getInputStream(), StandardCharsets.US_ASCII));
    }

    static Signals start() throws IOException {
        return new Signals(new ProcessBuilder("sh").redirectError(ProcessBuilder.Redirect.DISCARD).start());
    }

    /**
     * {@code kill -<signal> <pid>}.
     *
     * @return whether {@code kill} succeeded
     */
    synchronized boolean send(String signal, long pid) throws IOException {
        if (!signal.matches("[A-Z]+")) {
            throw new IllegalArgumentException("not a signal name: " + signal);
        }
        commands.write("kill -" + signal + " " + pid + " && echo ok || echo failed\n");
        commands.flush();
        String answer = answers.readLine();
        if (answer == null) {
            throw new IOException("the signalling shell ended (exit " + (shell.isAlive() ? "?" : shell.exitValue())
                    + ")");
        }
        return answer.equals("ok");
    }

    @Override
    public void close() {
        try {
            commands.close();
            if (!shell.waitFor(2, TimeUnit.SECONDS)) {
                shell.destroyForcibly();
            }
        } catch (IOException e) {
            shell.destroyForcibly();
        } catch (InterruptedException e) {
            shell.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
