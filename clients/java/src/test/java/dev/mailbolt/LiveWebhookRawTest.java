package dev.mailbolt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * webhooks().update keeps the secret, webhooks().test reaches a receiver with a valid signature,
 * and messages().raw answers a message's source. Against the server of clients/harness.sh.
 */
class LiveWebhookRawTest {
    @Test
    @SuppressWarnings("unchecked")
    void updateTestAndRaw() throws Exception {
        String base = System.getenv("MAILBOLT_BASE_URL");
        assumeTrue(base != null && !base.isEmpty(), "MAILBOLT_BASE_URL is not set: no server to test against");
        MailboltClient c = LiveTest.keyed("MAILBOLT_TEST_API_KEY");

        List<byte[]> bodies = new CopyOnWriteArrayList<>();
        List<Map<String, List<String>>> headers = new CopyOnWriteArrayList<>();
        HttpServer srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        srv.createContext("/", ex -> {
            bodies.add(ex.getRequestBody().readAllBytes());
            headers.add(new LinkedHashMap<>(ex.getRequestHeaders()));
            byte[] answer = "got it".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, answer.length);
            ex.getResponseBody().write(answer);
            ex.close();
        });
        srv.start();
        try {
            String url = "http://127.0.0.1:" + srv.getAddress().getPort() + "/hook";
            ApiResponse w = c.webhooks().create(Map.of("url", url + "/old", "events", List.of("message.sent")));
            assertEquals(Boolean.TRUE, w.get("enabled"));
            ApiResponse up = c.webhooks().update(w.getString("id"), Map.of("url", url, "events", List.of("message.bounced"), "enabled", false));
            assertEquals(url, up.get("url"));
            assertEquals(List.of("message.bounced"), up.get("events"));
            assertEquals(Boolean.FALSE, up.get("enabled"));
            assertNull(up.get("secret"));
            BadRequestException bad = assertThrows(BadRequestException.class,
                    () -> c.webhooks().update(w.getString("id"), Map.of("events", List.of("message.exploded"))));
            assertEquals("VALIDATION_ERROR", bad.code());

            ApiResponse res = c.webhooks().test(w.getString("id"));
            assertEquals(Boolean.TRUE, res.get("success"));
            assertEquals(200, ((Number) res.get("status_code")).intValue());
            assertEquals("got it", res.get("response"));
            assertEquals("webhook.test", res.get("event"));
            assertEquals(1, bodies.size());
            Map<String, Object> flat = new LinkedHashMap<>();
            headers.get(0).forEach((k, v) -> flat.put(k, v.get(0)));
            WebhookVerifier.verify(bodies.get(0), flat, w.getString("secret")); // the secret from before the update
            assertEquals(res.get("event_id"), ((Map<String, Object>) Json.parse(bodies.get(0))).get("id"));
        } finally {
            srv.stop(0);
        }

        ApiResponse m = c.messages().send(LiveTest.message("ann@example.net"));
        byte[] raw = c.messages().raw(m.getString("id"), null);
        assertTrue(new String(raw, StandardCharsets.UTF_8).contains("Subject: Hello\r\n"));
        assertArrayEquals(raw, c.messages().raw(m.getString("id"), "ANN@example.net"));
        BadRequestException bad = assertThrows(BadRequestException.class, () -> c.messages().raw(m.getString("id"), "nobody@example.net"));
        assertEquals("VALIDATION_ERROR", bad.code());
    }
}
