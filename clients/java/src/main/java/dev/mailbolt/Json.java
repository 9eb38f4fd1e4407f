package dev.mailbolt;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON codec (RFC 8259), so the client needs nothing beyond the JDK.
 *
 * <p>Parsing gives {@code Map<String,Object>} (insertion-ordered), {@code List<Object>},
 * {@code String}, {@code Long} (or {@code BigInteger} when it does not fit), {@code Double}
 * (numbers with a fraction or exponent), {@code Boolean} and {@code null}. Nesting is bounded
 * ({@link #MAX_DEPTH}) so hostile input cannot overflow the stack; every malformed input raises
 * {@link JsonException}.
 */
public final class Json {
    /** The deepest nesting of arrays and objects accepted by {@link #parse} and {@link #write}. */
    public static final int MAX_DEPTH = 512;

    private Json() {}

    /** Parses UTF-8 bytes; invalid UTF-8 is a {@link JsonException}. */
    public static Object parse(byte[] utf8) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8)).toString();
        } catch (CharacterCodingException e) {
            throw new JsonException("invalid UTF-8", -1);
        }
        return parse(text);
    }

    /** Parses one JSON value; anything but whitespace after it is an error. */
    public static Object parse(String text) {
        if (text == null) throw new JsonException("no input", 0);
        Parser p = new Parser(text);
        p.skipWs();
        Object v = p.value(0);
        p.skipWs();
        if (p.pos != text.length()) throw new JsonException("unexpected data after the value", p.pos);
        return v;
    }

    /** Writes a value as compact JSON. */
    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v, int depth) {
        if (depth > MAX_DEPTH) throw new JsonException("nesting deeper than " + MAX_DEPTH, -1);
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            writeString(sb, (String) v);
        } else if (v instanceof Boolean) {
            sb.append(v.toString());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) throw new JsonException("cannot write " + d + " as JSON", -1);
            sb.append(v instanceof Float ? Float.toString((Float) v) : Double.toString(d));
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger) {
            sb.append(v.toString());
        } else if (v instanceof BigDecimal) {
            sb.append(((BigDecimal) v).toString());
        } else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!(e.getKey() instanceof String)) throw new JsonException("object keys must be strings", -1);
                if (!first) sb.append(',');
                first = false;
                writeString(sb, (String) e.getKey());
                sb.append(':');
                write(sb, e.getValue(), depth + 1);
            }
            sb.append('}');
        } else if (v instanceof Collection || v instanceof Object[]) {
            Iterable<?> items = v instanceof Collection ? (Collection<?>) v : List.of((Object[]) v);
            sb.append('[');
            boolean first = true;
            for (Object item : items) {
                if (!first) sb.append(',');
                first = false;
                write(sb, item, depth + 1);
            }
            sb.append(']');
        } else {
            throw new JsonException("cannot write a " + v.getClass().getName() + " as JSON", -1);
        }
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static void writeString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                case '\b': sb.append("\\b"); break;
                case '\f': sb.append("\\f"); break;
                default:
                    // Control characters must be escaped; surrogates are escaped so that a lone
                    // one still gives valid UTF-8 output.
                    if (c < 0x20 || Character.isSurrogate(c)) {
                        sb.append("\\u").append(HEX[c >> 12 & 15]).append(HEX[c >> 8 & 15])
                                .append(HEX[c >> 4 & 15]).append(HEX[c & 15]);
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    private static final class Parser {
        final String s;
        int pos;

        Parser(String s) {
            this.s = s;
        }

        JsonException error(String msg) {
            return new JsonException(msg, pos);
        }

        void skipWs() {
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') pos++;
                else break;
            }
        }

        Object value(int depth) {
            if (pos >= s.length()) throw error("unexpected end of input");
            char c = s.charAt(pos);
            switch (c) {
                case '{': return object(depth + 1);
                case '[': return array(depth + 1);
                case '"': return string();
                case 't': literal("true"); return Boolean.TRUE;
                case 'f': literal("false"); return Boolean.FALSE;
                case 'n': literal("null"); return null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw error("unexpected character '" + printable(c) + "'");
            }
        }

        static String printable(char c) {
            return c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c);
        }

        void literal(String word) {
            if (!s.startsWith(word, pos)) throw error("invalid literal");
            pos += word.length();
        }

        Map<String, Object> object(int depth) {
            if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH);
            pos++; // {
            Map<String, Object> m = new LinkedHashMap<>();
            skipWs();
            if (pos < s.length() && s.charAt(pos) == '}') {
                pos++;
                return m;
            }
            while (true) {
                skipWs();
                if (pos >= s.length() || s.charAt(pos) != '"') throw error("expected a string key");
                String key = string();
                skipWs();
                if (pos >= s.length() || s.charAt(pos) != ':') throw error("expected ':'");
                pos++;
                skipWs();
                m.put(key, value(depth));
                skipWs();
                if (pos >= s.length()) throw error("unexpected end of input in an object");
                char c = s.charAt(pos++);
                if (c == '}') return m;
                if (c != ',') {
                    pos--;
                    throw error("expected ',' or '}'");
                }
            }
        }

        List<Object> array(int depth) {
            if (depth > MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH);
            pos++; // [
            List<Object> l = new ArrayList<>();
            skipWs();
            if (pos < s.length() && s.charAt(pos) == ']') {
                pos++;
                return l;
            }
            while (true) {
                skipWs();
                l.add(value(depth));
                skipWs();
                if (pos >= s.length()) throw error("unexpected end of input in an array");
                char c = s.charAt(pos++);
                if (c == ']') return l;
                if (c != ',') {
                    pos--;
                    throw error("expected ',' or ']'");
                }
            }
        }

        String string() {
            pos++; // opening quote
            StringBuilder sb = null;
            int start = pos;
            while (true) {
                if (pos >= s.length()) throw error("unterminated string");
                char c = s.charAt(pos);
                if (c == '"') {
                    String out = sb == null ? s.substring(start, pos) : sb.append(s, start, pos).toString();
                    pos++;
                    return out;
                }
                if (c < 0x20) throw error("control character in a string");
                if (c == '\\') {
                    if (sb == null) sb = new StringBuilder();
                    sb.append(s, start, pos);
                    pos++;
                    if (pos >= s.length()) throw error("unterminated escape");
                    char e = s.charAt(pos++);
                    switch (e) {
                        case '"': sb.append('"'); break;
                        case '\\': sb.append('\\'); break;
                        case '/': sb.append('/'); break;
                        case 'b': sb.append('\b'); break;
                        case 'f': sb.append('\f'); break;
                        case 'n': sb.append('\n'); break;
                        case 'r': sb.append('\r'); break;
                        case 't': sb.append('\t'); break;
                        case 'u': {
                            if (pos + 4 > s.length()) throw error("truncated \\u escape");
                            int cp = 0;
                            for (int i = 0; i < 4; i++) {
                                int d = Character.digit(s.charAt(pos + i), 16);
                                if (d < 0) throw error("invalid \\u escape");
                                cp = cp * 16 + d;
                            }
                            pos += 4;
                            sb.append((char) cp);
                            break;
                        }
                        default:
                            pos--;
                            throw error("invalid escape");
                    }
                    start = pos;
                } else {
                    pos++;
                }
            }
        }

        Object number() {
            int start = pos;
            if (s.charAt(pos) == '-') pos++;
            if (pos >= s.length()) throw error("truncated number");
            char c = s.charAt(pos);
            if (c == '0') {
                pos++;
            } else if (c >= '1' && c <= '9') {
                while (pos < s.length() && isDigit(s.charAt(pos))) pos++;
            } else {
                throw error("invalid number");
            }
            boolean integral = true;
            if (pos < s.length() && s.charAt(pos) == '.') {
                integral = false;
                pos++;
                if (pos >= s.length() || !isDigit(s.charAt(pos))) throw error("digit expected after '.'");
                while (pos < s.length() && isDigit(s.charAt(pos))) pos++;
            }
            if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
                integral = false;
                pos++;
                if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) pos++;
                if (pos >= s.length() || !isDigit(s.charAt(pos))) throw error("digit expected in exponent");
                while (pos < s.length() && isDigit(s.charAt(pos))) pos++;
            }
            String text = s.substring(start, pos);
            if (text.length() > 1000) {
                pos = start;
                throw error("number longer than 1000 characters");
            }
            if (integral) {
                if (text.length() <= 18) return Long.parseLong(text);
                BigInteger big = new BigInteger(text);
                return big.bitLength() < 64 ? (Object) big.longValue() : big;
            }
            double d = Double.parseDouble(text);
            if (Double.isInfinite(d)) {
                pos = start;
                throw error("number out of range");
            }
            return d;
        }

        static boolean isDigit(char c) {
            return c >= '0' && c <= '9';
        }
    }
}
