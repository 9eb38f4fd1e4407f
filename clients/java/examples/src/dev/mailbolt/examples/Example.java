package dev.mailbolt.examples;

import dev.mailbolt.ApiException;
import dev.mailbolt.ApiResponse;
import dev.mailbolt.MailboltClient;
import dev.mailbolt.WebhookVerificationException;
import dev.mailbolt.WebhookVerifier;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** {@code examples/run send} and {@code examples/run verify}: see the README. */
public final class Example {
    public static void main(String[] args) throws Exception {
        String cmd = args.length > 0 ? args[0] : "";
        switch (cmd) {
            case "send":
                System.exit(send());
                break;
            case "verify":
                System.exit(verify());
                break;
            default:
                System.err.println("usage: examples/run send|verify");
                System.exit(2);
        }
    }

    static String need(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            System.err.println(name + " is not set");
            System.exit(2);
        }
        return v;
    }

    static int send() {
        String from = need("MAILBOLT_EXAMPLE_FROM");
        String to = need("MAILBOLT_EXAMPLE_TO");
        MailboltClient client = MailboltClient.fromEnv(); // MAILBOLT_BASE_URL, MAILBOLT_API_KEY, MAILBOLT_CA_FILE
        try {
            ApiResponse r = client.messages().send(Map.of(
                    "from", from,
                    "to", List.of(to),
                    "subject", "Hello from mailbolt-java",
                    "text", "Sent by clients/java/examples/run send."));
            System.out.println(r.getString("id"));
            return 0;
        } catch (ApiException e) {
            System.err.println("send failed: " + e.status() + " " + e.code() + ": " + e.apiMessage()
                    + " (request " + e.requestId() + ")");
            return 1;
        }
    }

    static int verify() throws Exception {
        byte[] body = System.in.readAllBytes();
        String[] secrets = Arrays.stream(need("MAILBOLT_EXAMPLE_WEBHOOK_SECRET").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).toArray(String[]::new);
        String signature = need("MAILBOLT_EXAMPLE_SIGNATURE").trim();
        String timestamp = need("MAILBOLT_EXAMPLE_TIMESTAMP").trim();
        // The signature may be the whole X-Service-Signature value or just the hex v1 value(s).
        String header = signature.contains("=") ? signature
                : "t=" + timestamp + ",v1=" + String.join(",v1=", signature.split(","));
        String now = System.getenv("MAILBOLT_EXAMPLE_NOW");
        Clock clock = now == null || now.isBlank() ? Clock.systemUTC()
                : Clock.fixed(Instant.ofEpochSecond(Long.parseLong(now.trim())), ZoneOffset.UTC);
        WebhookVerifier verifier = new WebhookVerifier(clock, WebhookVerifier.DEFAULT_TOLERANCE);
        try {
            verifier.check(body, Map.of("X-Service-Signature", header, "X-Service-Timestamp", timestamp), secrets);
            System.out.println("valid");
            return 0;
        } catch (WebhookVerificationException e) {
            System.err.println(e.reason() + ": " + e.getMessage());
            System.out.println("invalid");
            return 1;
        }
    }
}
