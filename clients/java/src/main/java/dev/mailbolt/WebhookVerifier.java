package dev.mailbolt;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifies the signature of a webhook request (spec §6): HMAC-SHA256 over {@code "<t>." + raw
 * body}, keyed by the Base64-decoded secret, hex-encoded, compared in constant time with every
 * {@code v1} of {@code X-Service-Signature}; {@code t} must be within the tolerance (300 s) of the
 * clock. Several secrets are accepted during a rotation.
 *
 * <pre>{@code
 * WebhookVerifier.verify(rawBody, requestHeaders, secret);            // throws when invalid
 * new WebhookVerifier(clock, Duration.ofSeconds(300)).isValid(rawBody, headers, current, previous);
 * }</pre>
 */
public final class WebhookVerifier {
    public static final Duration DEFAULT_TOLERANCE = Duration.ofSeconds(300);
    public static final String SIGNATURE_HEADER = "X-Service-Signature";
    public static final String TIMESTAMP_HEADER = "X-Service-Timestamp";

    private final Clock clock;
    private final Duration tolerance;

    /** The system clock and a 300-second tolerance. */
    public WebhookVerifier() {
        this(Clock.systemUTC(), DEFAULT_TOLERANCE);
    }

    /** A clock of your choice (tests) and a tolerance (may be widened, never disabled). */
    public WebhookVerifier(Clock clock, Duration tolerance) {
        if (tolerance == null || tolerance.isNegative() || tolerance.isZero()) {
            throw new IllegalArgumentException("the tolerance must be positive");
        }
        this.clock = clock;
        this.tolerance = tolerance;
    }

    /** {@link #check} with the system clock and a 300-second tolerance. */
    public static void verify(byte[] body, Map<String, ?> headers, String... secrets) {
        new WebhookVerifier().check(body, headers, secrets);
    }

    /** True when {@link #check} passes. */
    public boolean isValid(byte[] body, Map<String, ?> headers, String... secrets) {
        try {
            check(body, headers, secrets);
            return true;
        } catch (WebhookVerificationException e) {
            return false;
        }
    }

    /**
     * Throws {@link WebhookVerificationException} unless the request is authentic and fresh.
     * Headers are matched case-insensitively; a value may be a String or a list of them (the
     * first is used). Secrets are the webhook's Base64 secrets, current and previous.
     */
    public void check(byte[] body, Map<String, ?> headers, String... secrets) {
        if (secrets == null || secrets.length == 0) throw new IllegalArgumentException("no webhook secret given");
        String sig = header(headers, SIGNATURE_HEADER);
        if (sig == null || sig.isBlank()) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MISSING_SIGNATURE,
                    "no " + SIGNATURE_HEADER + " header");
        }
        String t = null;
        List<String> v1 = new ArrayList<>();
        for (String part : sig.split(",")) {
            int eq = part.indexOf('=');
            if (eq < 0) continue;
            String k = part.substring(0, eq).trim();
            String v = part.substring(eq + 1).trim();
            if (k.equals("t")) t = v;
            else if (k.equals("v1")) v1.add(v.toLowerCase(Locale.ROOT));
        }
        if (t == null || v1.isEmpty()) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MISSING_SIGNATURE,
                    SIGNATURE_HEADER + " lacks t or v1");
        }
        if (!t.matches("[0-9]{1,15}")) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED_SIGNATURE,
                    "t is not a number of seconds");
        }
        String ts = header(headers, TIMESTAMP_HEADER);
        if (ts != null && !ts.trim().equals(t)) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED_SIGNATURE,
                    TIMESTAMP_HEADER + " differs from t");
        }
        long when = Long.parseLong(t);
        long now = clock.instant().getEpochSecond();
        if (Math.abs(now - when) > tolerance.getSeconds()) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.STALE_TIMESTAMP,
                    "timestamp " + when + " is more than " + tolerance.getSeconds() + " s from now (" + now + ")");
        }
        byte[] prefix = (t + ".").getBytes(StandardCharsets.US_ASCII);
        boolean ok = false;
        for (String secret : secrets) {
            byte[] expected = hex(hmac(secret, prefix, body == null ? new byte[0] : body));
            for (String given : v1) {
                // No early exit: every pair is compared, each in constant time.
                ok |= MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.US_ASCII));
            }
        }
        if (!ok) {
            throw new WebhookVerificationException(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
                    "no v1 signature matches");
        }
    }

    /** The hex HMAC-SHA256 of {@code "<t>." + body} under a Base64 secret (for signing test requests). */
    public static String sign(String secret, long t, byte[] body) {
        return new String(hex(hmac(secret, (t + ".").getBytes(StandardCharsets.US_ASCII), body)), StandardCharsets.US_ASCII);
    }

    private static byte[] hmac(String secret, byte[] prefix, byte[] body) {
        byte[] key;
        try {
            key = Base64.getDecoder().decode(secret.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a webhook secret is not standard Base64", e);
        }
        if (key.length == 0) throw new IllegalArgumentException("a webhook secret is empty");
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(prefix);
            mac.update(body);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private static byte[] hex(byte[] in) {
        byte[] out = new byte[in.length * 2];
        for (int i = 0; i < in.length; i++) {
            out[2 * i] = HEX[(in[i] >> 4) & 15];
            out[2 * i + 1] = HEX[in[i] & 15];
        }
        return out;
    }

    private static String header(Map<String, ?> headers, String name) {
        if (headers == null) return null;
        for (Map.Entry<String, ?> e : headers.entrySet()) {
            if (e.getKey() != null && e.getKey().equalsIgnoreCase(name)) {
                Object v = e.getValue();
                if (v instanceof Collection) {
                    Collection<?> c = (Collection<?>) v;
                    v = c.isEmpty() ? null : c.iterator().next();
                }
                return v == null ? null : v.toString();
            }
        }
        return null;
    }
}
