package dev.mailbolt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Retry policy against a scripted local server (no real waits: the sleeper records delays).
 */
class RetryTest {
    HttpServer server;
    final Deque<String[]> script = new ArrayDeque<>(); // {status, retryAfter or "", body}
    final List<Map<String, List<String>>> seen = Collections.synchronizedList(new ArrayList<>());
    final List<Duration> slept = Collections.synchronizedList(new ArrayList<>());
    MailboltClient client;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", ex -> {
            seen.add(ex.getRequestHeaders());
            ex.getRequestBody().readAllBytes();
            String[] step;
            synchronized (script) {
                step = script.isEmpty() ? new String[] {"200", "", "{\"ok\":true}"} : script.poll();
            }
            byte[] out = step[2].getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.getResponseHeaders().add("X-Request-Id", "req-" + seen.size());
            ex.getResponseHeaders().add("X-RateLimit-Limit", "10");
            ex.getResponseHeaders().add("X-RateLimit-Remaining", "7");
            ex.getResponseHeaders().add("X-RateLimit-Reset", "1795320000");
            if (!step[1].isEmpty()) ex.getResponseHeaders().add("Retry-After", step[1]);
            int status = Integer.parseInt(step[0]);
            ex.sendResponseHeaders(status, status == 204 ? -1 : out.length);
            if (status != 204) ex.getResponseBody().write(out);
            ex.close();
        });
        server.start();
        client = MailboltClient.builder()
                .baseUrl("http://127.0.0.1:" + server.getAddress().getPort() + "/v1/")
                .apiKey("svc_test_x")
                .sleeper(slept::add)
                .build();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    static String err(String code) {
        return "{\"error\":{\"code\":\"" + code + "\",\"message\":\"m\",\"details\":{\"field\":\"f\"}}}";
    }

    @Test
    void transientErrorsAreRetriedWithOneIdempotencyKey() {
        script.add(new String[] {"503", "2", err("SERVICE_UNAVAILABLE")});
        script.add(new String[] {"504", "", err("GATEWAY_TIMEOUT")});
        script.add(new String[] {"429", "1", err("RATE_LIMIT_EXCEEDED")});
        script.add(new String[] {"202", "", "{\"id\":\"m1\",\"status\":\"queued\"}"});
        ApiResponse r = client.messages().send(Map.of("from", "a@example.com", "to", List.of("b@example.com")));
        assertEquals("m1", r.getString("id"));
        assertEquals(4, seen.size());
        String key = seen.get(0).get("Idempotency-Key").get(0);
        for (Map<String, List<String>> h : seen) {
            assertEquals(key, h.get("Idempotency-Key").get(0));
            assertEquals("mailbolt-java/0.1.0", h.get("User-agent").get(0));
            assertEquals("svc_test_x", h.get("X-api-key").get(0));
        }
        assertEquals(3, slept.size());
        // Retry-After is honoured (plus under 100 ms of jitter); without it the backoff is jittered
        assertTrue(slept.get(0).toMillis() >= 2000 && slept.get(0).toMillis() < 2100, slept.toString());
        assertTrue(slept.get(1).toMillis() >= 500 && slept.get(1).toMillis() <= 1000, slept.toString());
        assertTrue(slept.get(2).toMillis() >= 1000 && slept.get(2).toMillis() < 1100, slept.toString());
        assertEquals(10, r.rateLimit().limit());
        assertEquals(7, r.rateLimit().remaining());
        assertEquals(1795320000L, r.rateLimit().reset());
        assertEquals("req-4", r.requestId());
    }

    @Test
    void givesUpAfterMaxRetries() {
        for (int i = 0; i < 10; i++) script.add(new String[] {"503", "", err("SERVICE_UNAVAILABLE")});
        ServerException e = assertThrows(ServerException.class, () -> client.account().get());
        assertEquals("SERVICE_UNAVAILABLE", e.code());
        assertEquals(4, seen.size()); // 1 + default 3 retries
        assertEquals(3, slept.size());
        assertTrue(slept.get(2).toMillis() >= 1000 && slept.get(2).toMillis() <= 2000, slept.toString());
        assertEquals(7, e.rateLimit().remaining());
    }

    @Test
    void nothingElseIsRetried() {
        String[][] cases = {{"500", err("INTERNAL_ERROR")}, {"429", err("QUOTA_EXCEEDED")}, {"429", err("RATE_LIMITED")},
            {"409", err("CONFLICT")}, {"503", "<html>proxy</html>"}, {"400", err("VALIDATION_ERROR")}};
        for (String[] c : cases) {
            seen.clear();
            script.add(new String[] {c[0], "0", c[1]});
            ApiException e = assertThrows(ApiException.class, () -> client.suppressions().add("a@example.com"));
            assertEquals(Integer.parseInt(c[0]), e.status());
            assertEquals(1, seen.size(), c[1]);
            assertNotNull(e.requestId());
        }
        assertTrue(slept.isEmpty());
    }

    @Test
    void maxRetriesIsConfigurable() {
        MailboltClient none = MailboltClient.builder().baseUrl(client.baseUrl()).apiKey("k").maxRetries(0).sleeper(slept::add).build();
        script.add(new String[] {"429", "1", err("RATE_LIMIT_EXCEEDED")});
        RateLimitException e = assertThrows(RateLimitException.class, () -> none.account().get());
        assertEquals(1, e.retryAfterSeconds());
        assertEquals(1, seen.size());
        assertThrows(IllegalArgumentException.class, () -> MailboltClient.builder().maxRetries(-1).build());
    }

    @Test
    void errorsAreTypedWithTheirFields() {
        script.add(new String[] {"422", "", "{\"error\":{\"code\":\"DOMAIN_NOT_VERIFIED\",\"message\":\"nope\",\"details\":{\"domain\":\"example.com\"}}}"});
        UnprocessableEntityException e = assertThrows(UnprocessableEntityException.class,
                () -> client.messages().send(Map.of("from", "a@example.com")));
        assertEquals(422, e.status());
        assertEquals("DOMAIN_NOT_VERIFIED", e.code());
        assertEquals("nope", e.apiMessage());
        assertEquals("example.com", e.details().get("domain"));
        assertEquals("req-1", e.requestId());
    }

    @Test
    void callerKeysAndPathEncoding() {
        client.messages().send(Map.of("from", "a@example.com"), RequestOptions.idempotencyKey("mine-1"));
        assertEquals("mine-1", seen.get(0).get("Idempotency-Key").get(0));
        script.add(new String[] {"204", "", ""});
        ApiResponse r = client.suppressions().delete("Bob+x@example.com");
        assertEquals(204, r.status());
        assertEquals(null, r.body());
        client.messages().get("m1");
        assertEquals(null, seen.get(2).get("Idempotency-Key")); // GETs carry none
    }

    @Test
    void tlsSetup() {
        assertEquals(List.of("TLSv1.3", "TLSv1.2"), List.of(MailboltClient.TLS_PROTOCOLS));
        MailboltException e = assertThrows(MailboltException.class,
                () -> MailboltClient.builder().caFile("/nonexistent/ca.pem").build());
        assertTrue(e.getMessage().contains("/nonexistent/ca.pem"));
        assertNotNull(MailboltClient.sslContext(null));
        assertThrows(MailboltException.class, () -> MailboltClient.sslContext(Path.of("ci.sh"))); // no certificate in it
    }
}
