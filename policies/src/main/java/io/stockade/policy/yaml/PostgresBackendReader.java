package io.stockade.policy.yaml;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.FenceMode;
import io.stockade.policy.BackendConfig.ParamSource;
import io.stockade.policy.BackendConfig.ParamType;
import io.stockade.policy.BackendConfig.SqlParam;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.policy.Datasource;
import io.stockade.policy.PathTemplate;
import io.stockade.policy.Policy;
import io.stockade.policy.SqlText;

/**
 * Reads a postgres {@code backend} block and checks its statements against its parameters: every
 * {@code :name} is declared (or is {@code :fencing_token} / {@code :scope}), every declared parameter is used,
 * a path parameter names a path variable, and in column mode every fenced statement compares
 * {@code :fencing_token}.
 */
final class PostgresBackendReader {
    private static final Pattern PARAM_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final Set<String> RESERVED = Set.of(BackendConfig.Postgres.FENCING_TOKEN,
            BackendConfig.Postgres.SCOPE);

    private PostgresBackendReader() {
    }

    static Optional<BackendConfig> read(Mapping backend, Optional<PathTemplate> path, Optional<Set<String>> methods,
                                        Optional<Policy.Fence> fence) {
        backend.allowOnly(Vocabulary.POSTGRES_BACKEND_KEYS);
        Optional<Datasource> datasource = backend.required("datasource", DatasourceReader::read);
        Optional<FenceMode> mode = backend.optional("fence",
                f -> Values.keyword(f, "fence mode", Vocabulary.FENCE_MODES), FenceMode.TABLE);
        Optional<Boolean> migrate = backend.optional("migrate", Values::bool, true);
        Optional<Long> bodyLimit = backend.optional("body-limit", Values::size,
                BackendConfig.Postgres.DEFAULT_BODY_LIMIT);
        Optional<Integer> retries = backend.optional("retries", f -> Values.integer(f, 0, 100, "whole number"),
                BackendConfig.Postgres.DEFAULT_RETRIES);
        Optional<BackendConfig.EmptyGet> emptyGet = backend.optional("empty-get",
                f -> Values.keyword(f, "empty-get", Vocabulary.EMPTY_GET), BackendConfig.EmptyGet.NOT_FOUND);
        Optional<BackendConfig.Commit> commit = backend.optional("commit",
                f -> Values.keyword(f, "commit", Vocabulary.COMMITS), BackendConfig.Commit.SEPARATE);
        Optional<Boolean> oneStatement = backend.optional("one-statement", Values::bool, false);
        Optional<Map<String, SqlParam>> params = backend.optional("params", f -> params(f, path), Map.of());
        Optional<Map<String, List<Located>>> statements = backend.required("statements",
                f -> statements(f, methods));
        Optional<Optional<Located>> check = backend.optional("check", f -> statement(f, "check"));
        if (!Values.allPresent(datasource, mode, migrate, bodyLimit, retries, emptyGet, commit, oneStatement, params,
                statements, check)) {
            return Optional.empty();
        }
        if (commit.get() == BackendConfig.Commit.PIPELINED && mode.get() == FenceMode.COLUMN) {
            backend.get("commit").ifPresent(f -> f.error("commit: pipelined needs fence: table (column mode"
                    + " reads the statements' results before it decides to commit)"));
            return Optional.empty();
        }
        if (mode.get() == FenceMode.COLUMN && oneStatement.get()) {
            backend.get("one-statement").ifPresent(f -> f.error("one-statement needs fence: table (in column mode"
                    + " the fence is in the statements themselves)"));
            return Optional.empty();
        }
        boolean valid = checkPlaceholders(backend, params.get(), statements.get(), check.get());
        if (mode.get() == FenceMode.COLUMN) {
            valid &= checkColumnMode(backend, statements.get(), check.get(), fence);
        }
        if (!valid) {
            return Optional.empty();
        }
        Map<String, List<Statement>> byMethod = new LinkedHashMap<>();
        statements.get().forEach((method, list) -> byMethod.put(method,
                list.stream().map(Located::statement).toList()));
        return Optional.of(new BackendConfig.Postgres(datasource.get(), mode.get(), migrate.get(), params.get(),
                byMethod, check.get().map(Located::statement), bodyLimit.get(), retries.get(), emptyGet.get(),
                commit.get(), oneStatement.get()));
    }

    /** A statement with the field it was read from, for messages. */
    private record Located(Statement statement, Field field) {
    }

    private static Optional<Map<String, SqlParam>> params(Field field, Optional<PathTemplate> path) {
        return field.mapping().flatMap(mapping -> {
            Map<String, SqlParam> params = new LinkedHashMap<>();
            boolean valid = true;
            for (Map.Entry<String, Field> e : mapping.entries().entrySet()) {
                Optional<SqlParam> param = param(e.getKey(), e.getValue(), path);
                param.ifPresent(p -> params.put(p.name(), p));
                valid &= param.isPresent();
            }
            return valid ? Optional.of(params) : Optional.empty();
        });
    }

    private static Optional<SqlParam> param(String name, Field field, Optional<PathTemplate> path) {
        if (!PARAM_NAME.matcher(name).matches()) {
            field.error("'" + name + "' is not a valid parameter name: use letters, digits and '_', not starting"
                    + " with a digit");
            return Optional.empty();
        }
        if (RESERVED.contains(name)) {
            field.error("':" + name + "' is provided by the proxy and cannot be declared");
            return Optional.empty();
        }
        Optional<ParamSource> source;
        Optional<String> fieldName;
        Optional<ParamType> type;
        Optional<Boolean> nullable;
        Optional<Optional<BackendConfig.Digits>> digits;
        if (field.isMapping()) {
            Optional<Mapping> m = field.mapping().map(x -> x.allowOnly(Vocabulary.PARAM_KEYS));
            source = m.flatMap(x -> x.required("from", f -> Values.keyword(f, "parameter source",
                    Vocabulary.PARAM_SOURCES)));
            fieldName = m.flatMap(x -> x.optional("field", Values::text, name));
            type = m.flatMap(x -> x.optional("type", f -> Values.keyword(f, "parameter type",
                    Vocabulary.PARAM_TYPES), ParamType.STRING));
            nullable = m.flatMap(x -> x.optional("nullable", Values::bool, false));
            digits = m.flatMap(x -> type.flatMap(t -> digits(x, name, t)));
        } else {
            source = Values.keyword(field, "parameter source", Vocabulary.PARAM_SOURCES);
            fieldName = Optional.of(name);
            type = Optional.of(ParamType.STRING);
            nullable = Optional.of(false);
            digits = Optional.of(Optional.empty());
        }
        if (!Values.allPresent(source, fieldName, type, nullable, digits)) {
            return Optional.empty();
        }
        if (source.get() == ParamSource.PATH && path.isPresent()
                && !path.get().variables().contains(fieldName.get())) {
            field.error("parameter '" + name + "' is read from path variable '" + fieldName.get()
                    + "', but path " + path.get() + " has " + (path.get().variables().isEmpty() ? "no variables"
                    : "only " + String.join(", ", path.get().variables())));
            return Optional.empty();
        }
        return Optional.of(new SqlParam(name, source.get(), fieldName.get(), type.get(), nullable.get(),
                digits.get()));
    }

    /**
     * A {@code number} parameter's {@code precision} and {@code scale} (as {@code numeric(precision, scale)}; scale
     * 0 when only precision is given): empty when neither is given, absent (an error reported) when they are
     * invalid or the parameter is not a number.
     */
    private static Optional<Optional<BackendConfig.Digits>> digits(Mapping m, String name, ParamType type) {
        Optional<Field> precisionField = m.get("precision");
        Optional<Field> scaleField = m.get("scale");
        if (precisionField.isEmpty() && scaleField.isEmpty()) {
            return Optional.of(Optional.empty());
        }
        if (type != ParamType.NUMBER) {
            precisionField.or(() -> scaleField).ifPresent(f -> f.error("parameter '" + name + "': precision and"
                    + " scale apply to type: number only (this one is type: " + type.name().toLowerCase(Locale.ROOT)
                    + ")"));
            return Optional.empty();
        }
        if (precisionField.isEmpty()) {
            scaleField.get().error("parameter '" + name + "': scale needs precision, as numeric(precision, scale)"
                    + " does: give the column's precision too");
            return Optional.empty();
        }
        int max = BackendConfig.Digits.MAX_PRECISION;
        Optional<Integer> precision = Values.integer(precisionField.get(), 1, max, "whole number");
        Optional<Integer> scale = scaleField.isEmpty() ? Optional.of(0)
                : Values.integer(scaleField.get(), 0, max, "whole number");
        if (!Values.allPresent(precision, scale)) {
            return Optional.empty();
        }
        if (scale.get() > precision.get()) {
            scaleField.get().error("parameter '" + name + "': scale " + scale.get() + " is larger than precision "
                    + precision.get() + ": give the column's numeric(precision, scale), e.g. precision: 14, scale: 2");
            return Optional.empty();
        }
        return Optional.of(Optional.of(new BackendConfig.Digits(precision.get(), scale.get())));
    }

    private static Optional<Map<String, List<Located>>> statements(Field field, Optional<Set<String>> methods) {
        return field.mapping().flatMap(mapping -> {
            Map<String, List<Located>> byMethod = new LinkedHashMap<>();
            boolean valid = true;
            Set<String> taken = methods.orElse(Set.of());
            for (Map.Entry<String, Field> e : mapping.entries().entrySet()) {
                String method = e.getKey().toUpperCase(Locale.ROOT);
                Field value = e.getValue();
                if (!Vocabulary.METHODS.contains(method)) {
                    value.error(Suggestions.unknown("method", e.getKey(), Vocabulary.METHODS));
                    valid = false;
                    continue;
                }
                if (!taken.isEmpty() && !taken.contains(method)) {
                    value.error(method + " is not in match.methods: this policy never sees " + method + " requests");
                    valid = false;
                    continue;
                }
                Optional<List<Located>> list = statementList(value, method);
                list.ifPresent(l -> byMethod.put(method, l));
                valid &= list.isPresent();
            }
            for (String method : taken) {
                if (!byMethod.containsKey(method) && valid) {
                    mapping.error("match.methods takes " + method + " but 'statements' has no " + method
                            + " entry");
                    valid = false;
                }
            }
            if (byMethod.isEmpty() && valid) {
                mapping.error("list the statements of at least one method, e.g. PUT: UPDATE ...");
                valid = false;
            }
            return valid ? Optional.of(byMethod) : Optional.empty();
        });
    }

    private static Optional<List<Located>> statementList(Field field, String method) {
        if (!field.isList()) {
            return statement(field, method + "[0]").map(List::of);
        }
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("must list at least one statement");
                return Optional.empty();
            }
            List<Located> list = new ArrayList<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<Located> s = statement(item, method + "[" + list.size() + "]");
                s.ifPresent(list::add);
                valid &= s.isPresent();
            }
            return valid ? Optional.of(list) : Optional.empty();
        });
    }

    /** A statement: SQL text, or a mapping with {@code name} and {@code sql}. */
    private static Optional<Located> statement(Field field, String defaultName) {
        Optional<String> name;
        Optional<Field> sqlField;
        if (field.isMapping()) {
            Optional<Mapping> m = field.mapping().map(x -> x.allowOnly(Vocabulary.STATEMENT_KEYS));
            name = m.flatMap(x -> x.optional("name", Values::text, defaultName));
            sqlField = m.flatMap(x -> x.required("sql"));
        } else {
            name = Optional.of(defaultName);
            sqlField = Optional.of(field);
        }
        Optional<SqlText> sql = sqlField.flatMap(f -> Values.text(f).flatMap(text -> {
            try {
                SqlText parsed = SqlText.parse(text);
                Optional<String> control = parsed.firstKeyword().filter(TRANSACTION_CONTROL::contains);
                if (control.isPresent()) {
                    f.error("'" + control.get() + "' is transaction control, which belongs to the proxy: every write"
                            + " runs in one transaction that it begins and commits (or rolls back with the fence)");
                    return Optional.empty();
                }
                return Optional.of(parsed);
            } catch (IllegalArgumentException e) {
                f.error(Values.message(e));
                return Optional.empty();
            }
        }));
        if (!Values.allPresent(name, sql)) {
            return Optional.empty();
        }
        return Optional.of(new Located(new Statement(name.get(), sql.get()), sqlField.get()));
    }

    /** The statements that would end, nest or split the write's transaction. */
    private static final Set<String> TRANSACTION_CONTROL = Set.of("BEGIN", "START", "COMMIT", "END", "ROLLBACK",
            "ABORT", "SAVEPOINT", "RELEASE", "PREPARE");

    private static boolean checkPlaceholders(Mapping backend, Map<String, SqlParam> params,
                                             Map<String, List<Located>> statements, Optional<Located> check) {
        boolean valid = true;
        Set<String> used = new HashSet<>();
        List<Located> all = new ArrayList<>();
        statements.values().forEach(all::addAll);
        check.ifPresent(all::add);
        Set<String> known = new TreeSet<>(params.keySet());
        known.addAll(RESERVED);
        for (Located s : all) {
            for (String name : new TreeSet<>(s.statement().sql().placeholders())) {
                used.add(name);
                if (!known.contains(name)) {
                    String suggestion = Suggestions.closest(name, known).map(c -> " did you mean ':" + c + "'?")
                            .orElse("");
                    s.field().error("statement " + s.statement().name() + " uses ':" + name
                            + "', which is not declared in 'params';" + suggestion + " declared: "
                            + String.join(", ", known.stream().map(k -> ":" + k).toList()));
                    valid = false;
                }
            }
        }
        for (String declared : params.keySet()) {
            if (!used.contains(declared)) {
                backend.get("params").ifPresent(f -> f.error("parameter '" + declared
                        + "' is declared but no statement uses ':" + declared + "'"));
                valid = false;
            }
        }
        return valid;
    }

    private static boolean checkColumnMode(Mapping backend, Map<String, List<Located>> statements,
                                           Optional<Located> check, Optional<Policy.Fence> fence) {
        boolean valid = true;
        if (fence.isPresent() && fence.get().mode() != Policy.Mode.ENFORCE) {
            backend.get("fence").ifPresent(f -> f.error("fence: column needs fence.mode enforce (the comparison"
                    + " with :fencing_token is in your statements, so they cannot run unfenced); use fence: table"
                    + " for observe or off"));
            valid = false;
        }
        Set<String> fenced = fence.map(Policy.Fence::methods).orElse(Set.of());
        for (Map.Entry<String, List<Located>> e : statements.entrySet()) {
            if (!fenced.contains(e.getKey())) {
                continue;
            }
            for (Located s : e.getValue()) {
                if (!s.statement().sql().placeholders().contains(BackendConfig.Postgres.FENCING_TOKEN)) {
                    s.field().error("fence: column: fenced statement " + s.statement().name()
                            + " must compare the token column with :fencing_token (e.g. ... WHERE id = :id AND"
                            + " fence_token <= :fencing_token)");
                    valid = false;
                }
            }
        }
        if (check.isEmpty()) {
            backend.error("fence: column needs 'check': a SELECT of the token column of the row a write targets"
                    + " (e.g. SELECT fence_token FROM accounts WHERE id = :id), to tell a stale token from a"
                    + " missing row");
            valid = false;
        }
        return valid;
    }
}
