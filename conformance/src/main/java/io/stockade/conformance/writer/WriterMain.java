package io.stockade.conformance.writer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A {@link WriterLoop} as its own OS process, so it can be paused for real ({@code kill -STOP}): the arguments are
 * the loop's, its environment is the process's, its lines go to stdout, and a line {@code stop} on stdin ends it
 * after the current write.
 */
public final class WriterMain {

    private WriterMain() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        WriterLoop loop = new WriterLoop(List.of(args), System.getenv(), out::println);
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (IOException ignored) {
                // the coordinator is gone: stop as well
            }
            loop.stop();
        });
        loop.run();
        System.exit(0);
    }
}
