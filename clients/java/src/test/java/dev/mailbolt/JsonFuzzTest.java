package dev.mailbolt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The JSON codec: known values, randomized round trips, and malformed or hostile input. */
class JsonFuzzTest {
    private static final long SEED = 0x6d61696c626f6c74L; // fixed: the suite is deterministic

    @Test
    void parsesKnownDocuments() {
        Object v = Json.parse(" {\"a\":[1,-2.5e3,true,false,null,\"x\\u00e9\\n\\ud83d\\ude00\"],\"b\":{}} ");
        Map<?, ?> m = (Map<?, ?>) v;
        assertEquals(List.of(1L, -2500.0, true, false), ((List<?>) m.get("a")).subList(0, 4));
        assertEquals("xé\n😀", ((List<?>) m.get("a")).get(5));
        assertEquals(new BigInteger("123456789012345678901234567890"), Json.parse("123456789012345678901234567890"));
        assertEquals(Long.MIN_VALUE, Json.parse(String.valueOf(Long.MIN_VALUE)));
        assertEquals("{\"k\":\"\\u0001\\\"\\\\\"}", Json.write(Map.of("k", "\u0001\"\\")));
        assertEquals(Map.of("é", "😀"), Json.parse("{\"é\":\"😀\"}".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void randomValuesRoundTrip() {
        Random r = new Random(SEED);
        for (int i = 0; i < 3000; i++) {
            Object v = value(r, 0);
            String text = Json.write(v);
            Object back = Json.parse(text);
            assertEquals(v, back, () -> "round trip of " + text);
            assertEquals(text, Json.write(back));
            // the UTF-8 path gives the same value
            assertEquals(v, Json.parse(text.getBytes(StandardCharsets.UTF_8)));
        }
    }

    @Test
    void malformedInputRaisesJsonException() {
        String[] bad = {"", " ", "{", "}", "[", "]", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[1 2]",
            "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN", "Infinity", "-Infinity", "tru", "nul",
            "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"a\u0001b\"", "[1]x", "{\"a\":1}}", "1e400",
            "\"\\", "[\"a\",", "{\"a\"", "{\"a\":", "{1:2}", "'a'", "[,1]", "{,}", "--1", "1.0e1.0"};
        for (String s : bad) {
            assertThrows(JsonException.class, () -> Json.parse(s), () -> "accepted: " + s);
        }
        assertThrows(JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xff, '"'}));
        assertThrows(JsonException.class, () -> Json.parse((String) null));
        assertThrows(JsonException.class, () -> Json.write(Double.NaN));
        assertThrows(JsonException.class, () -> Json.write(Map.of(1, 2)));
        assertThrows(JsonException.class, () -> Json.write(new Object()));
    }

    @Test
    void deepNestingIsRefusedNotOverflowed() {
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            for (String open : new String[] {"[", "{\"a\":"}) {
                String deep = open.repeat(200_000);
                JsonException e = assertThrows(JsonException.class, () -> Json.parse(deep));
                assertTrue(e.getMessage().contains("nesting"), e.getMessage());
            }
            String ok = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
            assertEquals(ok, Json.write(Json.parse(ok)));
            assertThrows(JsonException.class, () -> Json.parse("[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1)));
            Object nested = List.of();
            for (int i = 0; i < Json.MAX_DEPTH + 5; i++) nested = List.of(nested);
            Object tooDeep = nested;
            assertThrows(JsonException.class, () -> Json.write(tooDeep));
            assertThrows(JsonException.class, () -> Json.parse("9".repeat(100_000)));
        });
    }

    @Test
    void mutatedDocumentsParseOrFailCleanly() {
        Random r = new Random(SEED + 1);
        String alphabet = "{}[],:\"\\-+.eE0123456789tfnulraséx \n\u0000\ud800";
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            for (int i = 0; i < 5000; i++) {
                StringBuilder sb = new StringBuilder(Json.write(value(r, 0)));
                int edits = 1 + r.nextInt(4);
                for (int k = 0; k < edits; k++) {
                    int at = sb.length() == 0 ? 0 : r.nextInt(sb.length() + 1);
                    switch (r.nextInt(3)) {
                        case 0: sb.insert(at, alphabet.charAt(r.nextInt(alphabet.length()))); break;
                        case 1: if (at < sb.length()) sb.deleteCharAt(at); break;
                        default: sb.setLength(Math.min(at, sb.length()));
                    }
                }
                String s = sb.toString();
                try {
                    Object v = Json.parse(s);
                    assertEquals(v, Json.parse(Json.write(v)), () -> "re-parse of " + s);
                } catch (JsonException expected) {
                    // a clear, typed failure is what we want
                } catch (RuntimeException | StackOverflowError e) {
                    fail("input " + s + " raised " + e);
                }
            }
        });
    }

    private static Object value(Random r, int depth) {
        int kind = r.nextInt(depth > 6 ? 6 : 8);
        switch (kind) {
            case 0: return null;
            case 1: return r.nextBoolean();
            case 2: return r.nextInt(4) == 0 ? (long) r.nextInt(10) : r.nextLong();
            case 3: {
                double d = r.nextInt(3) == 0 ? r.nextInt(1000) / 8.0 : Double.longBitsToDouble(r.nextLong());
                return Double.isFinite(d) ? d : 0.5;
            }
            case 4:
            case 5: return string(r);
            case 6: {
                List<Object> l = new ArrayList<>();
                for (int i = r.nextInt(5); i > 0; i--) l.add(value(r, depth + 1));
                return l;
            }
            default: {
                Map<String, Object> m = new LinkedHashMap<>();
                for (int i = r.nextInt(5); i > 0; i--) m.put(string(r), value(r, depth + 1));
                return m;
            }
        }
    }

    private static String string(Random r) {
        StringBuilder sb = new StringBuilder();
        for (int i = r.nextInt(12); i > 0; i--) {
            switch (r.nextInt(6)) {
                case 0: sb.append((char) r.nextInt(0x20)); break;            // control characters
                case 1: sb.append("\"\\/".charAt(r.nextInt(3))); break;
                case 2: sb.append((char) (0xd800 + r.nextInt(0x800))); break; // lone surrogates too
                case 3: sb.appendCodePoint(0x1f600 + r.nextInt(50)); break;    // astral
                case 4: sb.append((char) (0xa0 + r.nextInt(0x2000))); break;
                default: sb.append((char) (0x20 + r.nextInt(0x5f)));
            }
        }
        return sb.toString();
    }
}
