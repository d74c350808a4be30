package io.stockade.policy.yaml;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

/** A mapping of the policy file, keyed by text. Duplicate and non-text keys are reported when it is built. */
final class Mapping {
    private final Field field;
    private final Map<String, Node> keys = new LinkedHashMap<>();
    private final Map<String, Field> values = new LinkedHashMap<>();

    Mapping(Field field, MappingNode node) {
        this.field = field;
        for (NodeTuple tuple : node.getValue()) {
            Node keyNode = tuple.getKeyNode();
            if (!(keyNode instanceof ScalarNode scalar)) {
                field.error(keyNode, "a key must be a plain name, not a list or mapping");
                continue;
            }
            String key = scalar.getValue();
            Node first = keys.putIfAbsent(key, keyNode);
            if (first != null) {
                field.child(key, keyNode).error("duplicate key '" + key + "' (first at line "
                        + (first.getStartMark().getLine() + 1) + ")");
                continue;
            }
            values.put(key, field.child(key, tuple.getValueNode()));
        }
    }

    /** Reports every key not in {@code valid}, suggesting the closest valid key. */
    Mapping allowOnly(List<String> valid) {
        keys.forEach((key, node) -> {
            if (!valid.contains(key)) {
                field.child(key, node).error(Suggestions.unknown("key", key, valid));
            }
        });
        return this;
    }

    /** The keys and their values, in file order. */
    Map<String, Field> entries() {
        return values;
    }

    /** The value of a key, if present. */
    Optional<Field> get(String key) {
        return Optional.ofNullable(values.get(key));
    }

    /** Reports a problem at the mapping itself. */
    void error(String message) {
        field.error(message);
    }

    /** An optional key read by {@code reader}, or {@code fallback} when the key is absent. */
    <T> Optional<T> optional(String key, Function<Field, Optional<T>> reader, T fallback) {
        Field value = values.get(key);
        return value == null ? Optional.of(fallback) : reader.apply(value);
    }

    /**
     * An optional key without a fallback, read by {@code reader}: empty outside when the value is invalid (reported
     * by {@code reader}), else empty inside when the key is absent.
     */
    @SuppressWarnings("OptionalMapToOptional") // nested on purpose: outside valid or not, inside given or not
    <T> Optional<Optional<T>> optional(String key, Function<Field, Optional<T>> reader) {
        Field value = values.get(key);
        return value == null ? Optional.of(Optional.empty()) : reader.apply(value).map(Optional::of);
    }

    /** A required key read by {@code reader}; its absence is reported at the mapping. */
    <T> Optional<T> required(String key, Function<Field, Optional<T>> reader) {
        return required(key).flatMap(reader);
    }

    /** The value of a required key; its absence is reported at the mapping. */
    Optional<Field> required(String key) {
        Field value = values.get(key);
        if (value == null) {
            field.error("missing required key '" + key + "'");
        }
        return Optional.ofNullable(value);
    }
}
