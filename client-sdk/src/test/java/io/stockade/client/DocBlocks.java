package io.stockade.client;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The fenced blocks of the repository's README and docs/*.md, as {@link DocCommandsIT} reads them. */
final class DocBlocks {
    /** The languages of blocks a user types into a shell. */
    static final Set<String> SHELL = Set.of("sh", "bash", "shell", "console");
    /** A line of an unlabelled block that reads as a command: such a block must say it is {@code sh}. */
    private static final Pattern COMMAND = Pattern.compile(
            "^(\\$ |mvn |java |curl |aws |\\./|bin/|scripts/|bench/|[A-Z_]+=\\S* +\\S).*");

    private DocBlocks() {
    }

    /**
     * A fenced block.
     *
     * @param file     its file, relative to the repository's root
     * @param line     the line of its opening fence (1-based)
     * @param language what follows the opening fence, empty when nothing does
     * @param text     its lines, the fence's indentation removed, each ending in a newline
     */
    record Block(String file, int line, String language, String text) {
        /** How the classification tables name it: the file and the block's first line. */
        String key() {
            return file + ": " + text.lines().findFirst().orElse("").strip();
        }

        boolean shell() {
            return SHELL.contains(language);
        }

        /** An unlabelled block with a line that reads as a command (it should say {@code sh}). */
        boolean unlabelledCommands() {
            return language.isEmpty() && text.lines().anyMatch(l -> COMMAND.matcher(l).matches());
        }

        /** The line of the block that starts with {@code prefix}. */
        String lineStarting(String prefix) {
            return text.lines().filter(l -> l.startsWith(prefix)).findFirst()
                    .orElseThrow(() -> new AssertionError(key() + " has no line starting with '" + prefix + "'"));
        }
    }

    /** README.md and every docs/*.md, in that order. */
    static List<Path> docs(Path root) throws IOException {
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> files = Files.list(root.resolve("docs"))) {
            files.filter(p -> p.getFileName().toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    /** Every fenced block of these files. */
    static List<Block> of(Path root, List<Path> files) throws IOException {
        List<Block> blocks = new ArrayList<>();
        for (Path file : files) {
            String name = root.relativize(file).toString();
            List<String> lines = Files.readAllLines(file);
            StringBuilder text = null;
            String language = "";
            String indent = "";
            int opened = 0;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i);
                String stripped = line.strip();
                if (text == null && stripped.startsWith("```")) {
                    language = stripped.substring(3).strip();
                    indent = line.substring(0, line.indexOf("```"));
                    text = new StringBuilder();
                    opened = i + 1;
                } else if (text != null && stripped.equals("```")) {
                    blocks.add(new Block(name, opened, language, text.toString()));
                    text = null;
                } else if (text != null) {
                    text.append(line.startsWith(indent) ? line.substring(indent.length()) : line).append('\n');
                }
            }
        }
        return blocks;
    }

    /**
     * A console session: each {@code $ command} with the output printed under it (up to the next {@code $} line),
     * trailing blank lines removed.
     */
    record Step(String command, String output) {
    }

    static List<Step> session(Block block) {
        List<Step> steps = new ArrayList<>();
        String command = null;
        StringBuilder output = new StringBuilder();
        for (String line : block.text().split("\n", -1)) {
            if (line.startsWith("$ ")) {
                if (command != null) {
                    steps.add(new Step(command, output.toString().stripTrailing()));
                }
                command = line.substring(2);
                output.setLength(0);
            } else if (command != null) {
                output.append(line).append('\n');
            }
        }
        if (command != null) {
            steps.add(new Step(command, output.toString().stripTrailing()));
        }
        return steps;
    }
}
