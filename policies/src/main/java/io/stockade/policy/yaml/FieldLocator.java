package io.stockade.policy.yaml;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Where a field of a policy file is: the line and column of the value a path such as
 * {@code policies[2].backend.statements.PUT[0]} names, for a problem found after loading (PostgreSQL's verdict on a
 * statement) to be reported as the loader reports its own ({@code file:line:column: field: message}). A list index
 * into a single value ({@code PUT[0]} where {@code PUT} is one statement) names that value; an entry written as a
 * mapping ({@code {name, sql}}) is located at its {@code sql}.
 */
public final class FieldLocator {
    private static final Pattern STEP = Pattern.compile("([^.\\[\\]]+)|\\[(\\d+)\\]");

    private FieldLocator() {
    }

    /** The 1-based {line, column} of the field in the file, or empty when the file or the field cannot be read. */
    public static Optional<int[]> locate(Path file, String field) {
        try {
            return locate(Files.readString(file), field);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The 1-based {line, column} of the field in the YAML text, or empty. */
    public static Optional<int[]> locate(String yaml, String field) {
        Node node;
        try {
            node = new Yaml().compose(new StringReader(yaml));
        } catch (RuntimeException e) {
            return Optional.empty();
        }
        Matcher m = STEP.matcher(field);
        int at = 0;
        while (node != null && m.find()) {
            if (m.start() != at && field.charAt(at) != '.') {
                return Optional.empty();
            }
            at = m.end();
            node = m.group(1) != null ? child(node, m.group(1)) : element(node, Integer.parseInt(m.group(2)));
        }
        if (node instanceof MappingNode mapping && child(mapping, "sql") != null) {
            node = child(mapping, "sql");
        }
        return node == null ? Optional.empty()
                : Optional.of(new int[] {node.getStartMark().getLine() + 1, node.getStartMark().getColumn() + 1});
    }

    private static @Nullable Node child(@Nullable Node node, String key) {
        if (node instanceof MappingNode mapping) {
            for (NodeTuple t : mapping.getValue()) {
                if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(key)) {
                    return t.getValueNode();
                }
            }
        }
        return null;
    }

    private static @Nullable Node element(@Nullable Node node, int index) {
        if (node instanceof SequenceNode sequence) {
            return index < sequence.getValue().size() ? sequence.getValue().get(index) : null;
        }
        return index == 0 ? node : null; // one value where a list may stand
    }
}
