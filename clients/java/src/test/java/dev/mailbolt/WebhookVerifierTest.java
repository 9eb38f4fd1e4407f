package dev.mailbolt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Webhook verification against testdata/webhooks/signature.json. */
class WebhookVerifierTest {
    static Map<String, Object> vector;
    static byte[] body;
    static String secret, previous, header, rotationHeader;
    static long t;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void load() throws IOException {
        String env = System.getenv("MAILBOLT_WEBHOOK_VECTOR");
        Path p = env != null && !env.isEmpty() ? Path.of(env) : Path.of("../../testdata/webhooks/signature.json");
        vector = (Map<String, Object>) Json.parse(Files.readAllBytes(p));
        body = ((String) vector.get("body")).getBytes(StandardCharsets.UTF_8);
        secret = (String) vector.get("secret");
        previous = (String) vector.get("previous_secret");
        header = (String) vector.get("header");
        rotationHeader = (String) vector.get("header_during_rotation");
        t = ((Number) vector.get("timestamp")).longValue();
    }

    static WebhookVerifier at(long now) {
        return new WebhookVerifier(Clock.fixed(Instant.ofEpochSecond(now), ZoneOffset.UTC), WebhookVerifier.DEFAULT_TOLERANCE);
    }

    static Map<String, Object> headers(String sig) {
        return Map.of("x-service-signature", sig, "X-Service-Timestamp", List.of(String.valueOf(t)));
    }

    @Test
    void signsLikeTheVector() {
        assertEquals(vector.get("signature"), WebhookVerifier.sign(secret, t, body));
        assertEquals(vector.get("previous_signature"), WebhookVerifier.sign(previous, t, body));
    }

    @Test
    void acceptsTheValidVector() {
        at(t).check(body, headers(header), secret);
        assertTrue(at(t + 300).isValid(body, headers(header), secret));
        assertTrue(at(t - 300).isValid(body, headers(header), secret));
    }

    @Test
    void rejectsATamperedBody() {
        byte[] tampered = body.clone();
        tampered[tampered.length - 3] ^= 1;
        WebhookVerificationException e = assertThrows(WebhookVerificationException.class,
                () -> at(t).check(tampered, headers(header), secret));
        assertEquals(WebhookVerificationException.Reason.SIGNATURE_MISMATCH, e.reason());
        assertEquals(401, e.recommendedStatus());
        byte[] trailingNewline = (new String(body, StandardCharsets.UTF_8) + "\n").getBytes(StandardCharsets.UTF_8);
        assertFalse(at(t).isValid(trailingNewline, headers(header), secret));
    }

    @Test
    void rejectsAStaleTimestamp() {
        WebhookVerificationException e = assertThrows(WebhookVerificationException.class,
                () -> at(t + 301).check(body, headers(header), secret));
        assertEquals(WebhookVerificationException.Reason.STALE_TIMESTAMP, e.reason());
        assertEquals(400, e.recommendedStatus());
        assertFalse(at(t - 301).isValid(body, headers(header), secret));
        // a widened window accepts it
        assertTrue(new WebhookVerifier(Clock.fixed(Instant.ofEpochSecond(t + 301), ZoneOffset.UTC), Duration.ofSeconds(600))
                .isValid(body, headers(header), secret));
    }

    @Test
    void acceptsEitherSecretDuringRotation() {
        // the receiver holds both secrets; the sender signed with both (two v1 values)
        assertTrue(at(t).isValid(body, headers(rotationHeader), secret, previous));
        assertTrue(at(t).isValid(body, headers(rotationHeader), previous));
        assertTrue(at(t).isValid(body, headers(rotationHeader), secret));
        // the receiver still only knows the previous secret; the header only has the new one
        assertFalse(at(t).isValid(body, headers(header), previous));
        assertTrue(at(t).isValid(body, headers(header), previous, secret));
        String onlyPrevious = "t=" + t + ",v1=" + vector.get("previous_signature");
        assertTrue(at(t).isValid(body, headers(onlyPrevious), secret, previous));
        assertFalse(at(t).isValid(body, headers(onlyPrevious), secret));
    }

    @Test
    void rejectsMissingOrMalformedHeaders() {
        assertEquals(WebhookVerificationException.Reason.MISSING_SIGNATURE, assertThrows(WebhookVerificationException.class,
                () -> at(t).check(body, Map.of(), secret)).reason());
        assertFalse(at(t).isValid(body, headers("t=" + t), secret));
        assertFalse(at(t).isValid(body, headers("v1=" + vector.get("signature")), secret));
        assertFalse(at(t).isValid(body, headers("t=abc,v1=" + vector.get("signature")), secret));
        // X-Service-Timestamp must equal t
        assertFalse(at(t).isValid(body, Map.of("X-Service-Signature", header, "X-Service-Timestamp", "1"), secret));
        // unknown schemes are ignored
        assertTrue(at(t).isValid(body, Map.of("X-Service-Signature", header + ",v2=abc"), secret));
        assertThrows(IllegalArgumentException.class, () -> at(t).check(body, headers(header)));
        assertThrows(IllegalArgumentException.class, () -> at(t).check(body, headers(header), "not base64!"));
    }
}
