package ai.distill.engine;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Argument checks with messages that name the field: the contract's bounds, held on the Java side. */
final class Require {
    private Require() {}

    static int range(String field, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + " is " + value + ", not in " + min + ".." + max);
        }
        return value;
    }

    static String text(String field, String value, int minLength, int maxLength) {
        if (value == null) {
            throw new IllegalArgumentException(field + " is missing");
        }
        return optionalText(field, value, minLength, maxLength);
    }

    static String optionalText(String field, String value, int minLength, int maxLength) {
        if (value != null && (value.length() < minLength || value.length() > maxLength)) {
            throw new IllegalArgumentException(
                    field + " is " + value.length() + " characters long, not " + minLength + ".." + maxLength);
        }
        return value;
    }

    /** An immutable copy of a list of card names (null stays null: not known). */
    static List<String> cardNames(String field, List<String> names, int maxSize) {
        if (names == null) {
            return null;
        }
        if (names.size() > maxSize) {
            throw new IllegalArgumentException(field + " has " + names.size() + " cards, at most " + maxSize);
        }
        List<String> copy = new ArrayList<>(names.size());
        for (String name : names) {
            copy.add(text(field + " card", name, 1, 200));
        }
        return Collections.unmodifiableList(copy);
    }
}
