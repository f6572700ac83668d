package ai.distill.engine;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader and compact writer (RFC 8259): what the protocol's frames need, nothing more.
 *
 * <p>JSON values map to Java values as follows, both ways:
 *
 * <ul>
 *   <li>object: {@code Map<String, Object>} (read as a {@link LinkedHashMap} in document order; a repeated key
 *       keeps its last value);
 *   <li>array: {@code List<Object>} (written from any {@link Iterable}, or a {@code boolean[]});
 *   <li>string: {@link String};
 *   <li>number: read as {@link Long} when it is an integer that fits, {@link BigInteger} when it is a larger
 *       integer, else {@link Double}; written from any of these and {@link Integer}, {@link Short},
 *       {@link Byte}, {@link Float}, {@link BigDecimal} (a NaN or an infinity is refused);
 *   <li>{@code true}/{@code false}: {@link Boolean}; {@code null}: {@code null}.
 * </ul>
 *
 * <p>Output is compact (no spaces, no newline) and UTF-8 safe: control characters are escaped, and a lone
 * surrogate (which UTF-8 cannot carry) is written as U+FFFD.
 */
public final class Json {
    /** The deepest nesting read or written; deeper input is refused rather than overflowing the stack. */
    public static final int MAX_DEPTH = 256;

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Json() {}

    /**
     * Reads one JSON value; only whitespace may surround it.
     *
     * @param text the JSON text
     * @return the value, as described in the class comment
     * @throws JsonException the text is not one JSON value
     */
    public static Object parse(String text) throws JsonException {
        return new Parser(text).document();
    }

    /**
     * Writes a value as compact JSON.
     *
     * @param value a value as described in the class comment
     * @return its JSON text
     * @throws IllegalArgumentException a value JSON cannot hold (another type, a NaN, a non-string key, a
     *     nesting deeper than {@link #MAX_DEPTH})
     */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder(256);
        write(out, value, 0);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("nested deeper than " + MAX_DEPTH + " (a cycle?)");
        }
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            writeString(out, (String) value);
        } else if (value instanceof Boolean) {
            out.append(((Boolean) value).booleanValue());
        } else if (value instanceof Long || value instanceof Integer || value instanceof Short
                || value instanceof Byte || value instanceof BigInteger) {
            out.append(value);
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new IllegalArgumentException("JSON has no " + d);
            }
            out.append(value);
        } else if (value instanceof BigDecimal) {
            out.append(((BigDecimal) value).toString());
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!(entry.getKey() instanceof String)) {
                    throw new IllegalArgumentException("a JSON object's key must be a string: " + entry.getKey());
                }
                if (!first) {
                    out.append(',');
                }
                first = false;
                writeString(out, (String) entry.getKey());
                out.append(':');
                write(out, entry.getValue(), depth + 1);
            }
            out.append('}');
        } else if (value instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object item : (Iterable<?>) value) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                write(out, item, depth + 1);
            }
            out.append(']');
        } else if (value instanceof boolean[]) {
            boolean[] flags = (boolean[]) value;
            out.append('[');
            for (int i = 0; i < flags.length; i++) {
                out.append(i == 0 ? "" : ",").append(flags[i]);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("cannot write a " + value.getClass().getName() + " as JSON");
        }
    }

    private static void writeString(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                case '\b':
                    out.append("\\b");
                    break;
                case '\f':
                    out.append("\\f");
                    break;
                default:
                    if (c < 0x20) {
                        out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
                    } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                            && Character.isLowSurrogate(s.charAt(i + 1))) {
                        out.append(c).append(s.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        out.append('\uFFFD');
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    /** A recursive-descent reader over one text. */
    private static final class Parser {
        private final String s;
        private int i;

        Parser(String s) {
            this.s = s;
        }

        Object document() throws JsonException {
            Object value = value(0);
            skipSpace();
            if (i < s.length()) {
                throw error("text after the JSON value");
            }
            return value;
        }

        private Object value(int depth) throws JsonException {
            if (depth > MAX_DEPTH) {
                throw error("nested deeper than " + MAX_DEPTH);
            }
            skipSpace();
            if (i >= s.length()) {
                throw error("a value expected, the text ended");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object(depth);
                case '[':
                    return array(depth);
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw error("unexpected character '" + c + "'");
            }
        }

        private Map<String, Object> object(int depth) throws JsonException {
            Map<String, Object> map = new LinkedHashMap<>();
            i++; // {
            skipSpace();
            if (peek() == '}') {
                i++;
                return map;
            }
            while (true) {
                skipSpace();
                if (peek() != '"') {
                    throw error("a string key expected");
                }
                String key = string();
                skipSpace();
                expect(':');
                map.put(key, value(depth + 1));
                skipSpace();
                char c = peek();
                i++;
                if (c == '}') {
                    return map;
                }
                if (c != ',') {
                    i--;
                    throw error("',' or '}' expected");
                }
            }
        }

        private List<Object> array(int depth) throws JsonException {
            List<Object> list = new ArrayList<>();
            i++; // [
            skipSpace();
            if (peek() == ']') {
                i++;
                return list;
            }
            while (true) {
                list.add(value(depth + 1));
                skipSpace();
                char c = peek();
                i++;
                if (c == ']') {
                    return list;
                }
                if (c != ',') {
                    i--;
                    throw error("',' or ']' expected");
                }
            }
        }

        private String string() throws JsonException {
            i++; // opening quote
            int start = i;
            while (i < s.length()) { // the common case: no escape, one substring
                char c = s.charAt(i);
                if (c == '"') {
                    return s.substring(start, i++);
                }
                if (c == '\\' || c < 0x20) {
                    break;
                }
                i++;
            }
            StringBuilder out = new StringBuilder(s.length() - start).append(s, start, i);
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return out.toString();
                }
                if (c < 0x20) {
                    i--;
                    throw error("a control character in a string (escape it)");
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"':
                    case '\\':
                    case '/':
                        out.append(e);
                        break;
                    case 'b':
                        out.append('\b');
                        break;
                    case 'f':
                        out.append('\f');
                        break;
                    case 'n':
                        out.append('\n');
                        break;
                    case 'r':
                        out.append('\r');
                        break;
                    case 't':
                        out.append('\t');
                        break;
                    case 'u':
                        out.append(hex4());
                        break;
                    default:
                        i--;
                        throw error("an unknown escape '\\" + e + "'");
                }
            }
            throw error("a string not closed");
        }

        private char hex4() throws JsonException {
            if (i + 4 > s.length()) {
                throw error("a \\u escape needs 4 hex digits");
            }
            int code = 0;
            for (int k = 0; k < 4; k++) {
                int digit = Character.digit(s.charAt(i + k), 16);
                if (digit < 0) {
                    throw error("a \\u escape needs 4 hex digits");
                }
                code = code * 16 + digit;
            }
            i += 4;
            return (char) code;
        }

        private Object number() throws JsonException {
            int start = i;
            if (peek() == '-') {
                i++;
            }
            if (peek() == '0') {
                i++;
            } else if (digits() == 0) {
                throw error("a digit expected");
            }
            boolean integral = true;
            if (peek() == '.') {
                i++;
                integral = false;
                if (digits() == 0) {
                    throw error("a digit expected after '.'");
                }
            }
            if (peek() == 'e' || peek() == 'E') {
                i++;
                integral = false;
                if (peek() == '+' || peek() == '-') {
                    i++;
                }
                if (digits() == 0) {
                    throw error("a digit expected in the exponent");
                }
            }
            String text = s.substring(start, i);
            if (!integral) {
                return Double.parseDouble(text);
            }
            if (text.length() <= 18) {
                return Long.parseLong(text);
            }
            BigInteger big = new BigInteger(text);
            return big.bitLength() < 64 ? (Object) big.longValue() : big;
        }

        private int digits() {
            int start = i;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                i++;
            }
            return i - start;
        }

        private Object literal(String word, Object value) throws JsonException {
            if (!s.startsWith(word, i)) {
                throw error("unexpected characters (not " + word + ")");
            }
            i += word.length();
            return value;
        }

        private void expect(char c) throws JsonException {
            if (peek() != c) {
                throw error("'" + c + "' expected");
            }
            i++;
        }

        private char peek() {
            return i < s.length() ? s.charAt(i) : '\0';
        }

        private void skipSpace() {
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                i++;
            }
        }

        private JsonException error(String what) {
            return new JsonException(what + " at character " + i);
        }
    }
}
