package io.stockade.policy.yaml;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * A node of the policy file with its field path (such as {@code policies[0].backend.url}). Reading it as a
 * mapping, list or text reports a wrong kind of node at the node's position and answers empty.
 */
final class Field {
    private final Node node;
    private final String path;
    private final Problems problems;
    private final EnvSubstitution env;

    private Field(Node node, String path, Problems problems, EnvSubstitution env) {
        this.node = node;
        this.path = path;
        this.problems = problems;
        this.env = env;
    }

    /** The document's root node. */
    static Field root(Node node, Problems problems, EnvSubstitution env) {
        return new Field(node, "", problems, env);
    }

    /** The value of {@code key} in this mapping. */
    Field child(String key, Node value) {
        return new Field(value, path.isEmpty() ? key : path + "." + key, problems, env);
    }

    /** The {@code index}th item of this list. */
    Field item(int index, Node value) {
        return new Field(value, path + "[" + index + "]", problems, env);
    }

    /** The field path, {@code (root)} for the document. */
    String path() {
        return path.isEmpty() ? "(root)" : path;
    }

    /** Reports a problem at this node. */
    void error(String message) {
        error(node, message);
    }

    /** Reports a problem with this field at another node, such as one of its keys. */
    void error(Node at, String message) {
        problems.add(at.getStartMark(), path(), message);
    }

    /** This node as a mapping; its duplicate keys are reported. */
    Optional<Mapping> mapping() {
        if (node instanceof MappingNode mapping) {
            return Optional.of(new Mapping(this, mapping));
        }
        error("expected a mapping (key: value lines), got " + describe(node));
        return Optional.empty();
    }

    /** Whether this node is a mapping (for keys that take a short scalar form or a long mapping form). */
    boolean isMapping() {
        return node instanceof MappingNode;
    }

    /** Whether this node is a list. */
    boolean isList() {
        return node instanceof SequenceNode;
    }

    /** Whether this node is a single value (not a list or mapping). */
    boolean isScalar() {
        return node instanceof ScalarNode;
    }

    /** This node's items. */
    Optional<List<Field>> items() {
        if (!(node instanceof SequenceNode sequence)) {
            error("expected a list, got " + describe(node));
            return Optional.empty();
        }
        List<Field> items = new ArrayList<>();
        for (Node value : sequence.getValue()) {
            items.add(item(items.size(), value));
        }
        return Optional.of(items);
    }

    /** This node as text, after environment substitution. A missing (null) value is an error. */
    Optional<String> text() {
        if (!(node instanceof ScalarNode scalar) || scalar.getTag().equals(Tag.NULL)) {
            error("expected a single value, got " + describe(node));
            return Optional.empty();
        }
        try {
            return Optional.of(env.apply(scalar.getValue()));
        } catch (IllegalArgumentException e) {
            error(Values.message(e));
            return Optional.empty();
        }
    }

    private static String describe(Node node) {
        return switch (node) {
            case MappingNode m -> "a mapping";
            case SequenceNode s -> "a list";
            case ScalarNode s when s.getTag().equals(Tag.NULL) -> "no value";
            case ScalarNode s -> "'" + s.getValue() + "'";
            default -> "a " + node.getNodeId();
        };
    }
}
