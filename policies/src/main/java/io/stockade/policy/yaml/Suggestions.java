package io.stockade.policy.yaml;

import java.util.Collection;
import java.util.Locale;
import java.util.Optional;

/** Messages for a word that is not in a fixed set: the valid words, and the closest one if it is close. */
final class Suggestions {

    private Suggestions() {
    }

    /**
     * {@code unknown <what> '<word>'; did you mean '<closest>'? valid: <a>, <b>} (the suggestion only when one
     * valid word is within a small edit distance, ignoring case).
     */
    static String unknown(String what, String word, Collection<String> valid) {
        String suggestion = closest(word, valid).map(c -> " did you mean '" + c + "'?").orElse("");
        return "unknown " + what + " '" + word + "';" + suggestion + " valid: " + String.join(", ", valid);
    }

    /** The valid word nearest to {@code word}, if it is at most 1 edit away (2 for words longer than 4). */
    static Optional<String> closest(String word, Collection<String> valid) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : valid) {
            int distance = distance(word.toLowerCase(Locale.ROOT), candidate.toLowerCase(Locale.ROOT));
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        int allowed = best != null && best.length() > 4 ? 2 : 1;
        return best != null && bestDistance <= allowed ? Optional.of(best) : Optional.empty();
    }

    /** Edit distance counting insertions, deletions, substitutions and swaps of adjacent characters. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
