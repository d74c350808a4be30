package io.stockade.proxy.sql.session;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The startup parameter {@code options} as the server reads it ({@code pg_split_opts}): words split at white space,
 * a backslash taking the next character as it is; {@code -c name=value}, {@code -cname=value} and
 * {@code --name=value} set a setting (its name case-folded, '-' read as '_').
 */
final class Options {
    private Options() {
    }

    /**
     * The settings and other words of {@code options}, in order: {@code {name, value}} for a setting (the name
     * normalised), {@code {null, word}} for any other word (kept as written).
     */
    static List<String[]> parse(String options) {
        List<String> words = words(options);
        List<String[]> out = new ArrayList<>();
        for (int i = 0; i < words.size(); i++) {
            String w = words.get(i);
            String setting = null;
            if (w.equals("-c") && i + 1 < words.size()) {
                setting = words.get(++i);
            } else if (w.startsWith("-c") && w.length() > 2) {
                setting = w.substring(2);
            } else if (w.startsWith("--") && w.length() > 2) {
                setting = w.substring(2);
            }
            if (setting == null) {
                out.add(new String[] {null, w});
                continue;
            }
            int eq = setting.indexOf('=');
            if (eq > 0) {
                out.add(new String[] {setting.substring(0, eq).toLowerCase(Locale.ROOT).replace('-', '_'),
                        setting.substring(eq + 1)});
            } else {
                out.add(new String[] {setting.toLowerCase(Locale.ROOT).replace('-', '_'), ""});
            }
        }
        return out;
    }

    /** {@code options} again, each setting as {@code -c name=value}, escaped. */
    static String format(List<String[]> settings) {
        List<String> words = new ArrayList<>();
        for (String[] s : settings) {
            if (s[0] == null) {
                words.add(escape(s[1]));
            } else {
                words.add("-c");
                words.add(escape(s[0] + "=" + s[1]));
            }
        }
        return String.join(" ", words);
    }

    private static List<String> words(String options) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean in = false;
        for (int i = 0; i < options.length(); i++) {
            char c = options.charAt(i);
            if (c == '\\' && i + 1 < options.length()) {
                word.append(options.charAt(++i));
                in = true;
            } else if (Character.isWhitespace(c)) {
                if (in) {
                    words.add(word.toString());
                    word.setLength(0);
                    in = false;
                }
            } else {
                word.append(c);
                in = true;
            }
        }
        if (in) {
            words.add(word.toString());
        }
        return words;
    }

    private static String escape(String word) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < word.length(); i++) {
            char c = word.charAt(i);
            if (c == '\\' || Character.isWhitespace(c)) {
                out.append('\\');
            }
            out.append(c);
        }
        return out.toString();
    }
}
