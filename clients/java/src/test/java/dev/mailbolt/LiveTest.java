package dev.mailbolt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Against a real server started by clients/harness.sh; skipped when MAILBOLT_BASE_URL is unset. */
class LiveTest {
    static String base;
    static MailboltClient test; // sandbox key: sends without a verified domain
    static MailboltClient live;

    @BeforeAll
    static void setUp() {
        base = System.getenv("MAILBOLT_BASE_URL");
        assumeTrue(base != null && !base.isEmpty(), "MAILBOLT_BASE_URL is not set: no server to test against");
        test = MailboltClient.builder().apiKey(env("MAILBOLT_TEST_API_KEY")).build();
        live = MailboltClient.fromEnv();
    }

    static String env(String name) {
        String v = System.getenv(name);
        assumeTrue(v != null && !v.isEmpty(), name + " is not set");
        return v;
    }

    static MailboltClient keyed(String envName) {
        return MailboltClient.builder().apiKey(env(envName)).build();
    }

    static Map<String, Object> message(String to) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("from", "Sender <sender@example.com>");
        m.put("to", List.of(to));
        m.put("subject", "Hello");
        m.put("text", "Hi from the Java suite");
        return m;
    }

    @Test
    void sendGetAndRateLimitHeaders() {
        ApiResponse sent = test.messages().send(message("ann@example.net"));
        assertEquals(202, sent.status());
        String id = sent.getString("id");
        assertNotNull(id);
        assertEquals("queued", sent.getString("status"));
        assertTrue(sent.rateLimit().limit() > 0);
        assertTrue(sent.rateLimit().remaining() >= 0);
        assertTrue(sent.rateLimit().reset() > 0);
        assertNotNull(sent.requestId());
        assertFalse(sent.idempotentReplayed());

        ApiResponse got = test.messages().get(id);
        assertEquals(id, got.getString("id"));
        assertEquals("test", got.getString("mode"));
        assertTrue(got.rateLimit().limit() > 0);
    }

    @Test
    void batch() {
        ApiResponse r = test.messages().sendBatch(List.of(message("b1@example.net"), message("b2@example.net")));
        assertEquals(202, r.status());
        assertEquals(2, r.items().size());
        for (Map<String, Object> m : r.items()) assertNotNull(m.get("id"));
    }

    @Test
    void cancelAScheduledMessage() {
        Map<String, Object> m = message("later@example.net");
        m.put("send_at", Instant.now().plus(1, ChronoUnit.DAYS).truncatedTo(ChronoUnit.SECONDS).toString());
        ApiResponse sent = test.messages().send(m);
        assertEquals("scheduled", sent.getString("status"));
        ApiResponse cancelled = test.messages().cancel(sent.getString("id"));
        assertEquals(200, cancelled.status());
        assertEquals("cancelled", cancelled.getString("status"));
    }

    @Test
    void suppressionsWalkedToTheEndInBothModes() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        Set<String> mine = new HashSet<>();
        for (int i = 0; i < 7; i++) {
            String r = "walk-" + tag + "-" + i + "@example.org";
            assertEquals(201, live.suppressions().add(r).status());
            mine.add(r);
        }
        // cursor mode
        List<String> cursorWalk = new ArrayList<>();
        int pages = 0;
        for (Page p : live.suppressions().listAll(Map.of("limit", 2))) {
            pages++;
            assertFalse(p.pageMode());
            for (Map<String, Object> s : p.items()) cursorWalk.add((String) s.get("recipient"));
        }
        assertTrue(pages >= 4, "pages: " + pages);
        assertEquals(cursorWalk.size(), new HashSet<>(cursorWalk).size(), "no repeats");
        assertTrue(cursorWalk.containsAll(mine));
        // page mode, from page 1, following the Link header
        List<String> pageWalk = new ArrayList<>();
        long total = -1;
        int pageNumber = 0;
        for (Page p : live.suppressions().listAll(Map.of("limit", 2, "page", 1))) {
            assertTrue(p.pageMode());
            assertEquals(++pageNumber, ((Number) p.get("page")).intValue());
            total = ((Number) p.get("total")).longValue();
            for (Map<String, Object> s : p.items()) pageWalk.add((String) s.get("recipient"));
        }
        assertEquals(total, pageWalk.size());
        assertEquals(cursorWalk, pageWalk);
        // items() walks every item; a single page is a single call
        List<String> items = new ArrayList<>();
        for (Map<String, Object> s : live.suppressions().listAll(Map.of("limit", 3)).items()) items.add((String) s.get("recipient"));
        assertEquals(cursorWalk, items);
        Page first = live.suppressions().list(Map.of("limit", 2));
        assertEquals(2, first.items().size());
        assertTrue(first.hasNext());
        assertNotNull(first.nextCursor());
        Page second = live.suppressions().list(Map.of("limit", 2, "page", 2));
        assertEquals("3", second.links().get("next").replaceAll(".*page=(\\d+).*", "$1"));
        // delete one, by recipient (path-encoded)
        assertEquals(204, live.suppressions().delete("walk-" + tag + "-0@example.org").status());
    }

    @Test
    void suppressionsImportAndExport() {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String a = "imp-a-" + tag + "@example.org", b = "imp-b-" + tag + "@example.org";
        ApiResponse res = live.suppressions().importSuppressions(List.of(Map.of("recipient", a),
                Map.of("recipient", b, "reason", "unsubscribe", "stream", "broadcast"), Map.of("recipient", a)));
        assertEquals(200, res.status());
        assertEquals(2L, ((Number) res.get("added")).longValue());
        assertEquals(1L, ((Number) res.get("already_present")).longValue());
        BadRequestException e = assertThrows(BadRequestException.class, () -> live.suppressions().importSuppressions(
                List.of(Map.of("recipient", "imp-c-" + tag + "@example.org"), Map.of("recipient", "not an address"))));
        assertEquals("VALIDATION_ERROR", e.code());
        assertEquals(1L, ((Number) e.details().get("index")).longValue());
        String csv = live.suppressions().export();
        assertTrue(csv.startsWith("recipient,reason,stream\n"), csv);
        assertTrue(csv.contains(a + ",manual,\n" + b + ",unsubscribe,broadcast\n"), csv);
        assertFalse(csv.contains("imp-c-" + tag));
        assertEquals(1, live.suppressions().export("broadcast").split(tag, -1).length - 1);
        assertFalse(keyed("MAILBOLT_OTHER_API_KEY").suppressions().export().contains(tag));
        // b's entry is for broadcast only: its transactional entry is not there.
        assertThrows(NotFoundException.class, () -> live.suppressions().deleteFromStream(b, "transactional"));
        assertEquals(204, live.suppressions().deleteFromStream(b, "broadcast").status());
        live.suppressions().delete(a);
    }

    @Test
    void messagesWalkedInBothModes() {
        for (int i = 0; i < 3; i++) test.messages().send(message("walk" + i + "@example.net"));
        List<Object> cursorIds = new ArrayList<>();
        for (Map<String, Object> m : test.messages().listAll(Map.of("limit", 2)).items()) cursorIds.add(m.get("id"));
        List<Object> pageIds = new ArrayList<>();
        for (Map<String, Object> m : test.messages().listAll(Map.of("limit", 2, "page", 1)).items()) pageIds.add(m.get("id"));
        assertTrue(cursorIds.size() >= 3);
        assertEquals(new HashSet<>(cursorIds), new HashSet<>(pageIds));
        assertEquals(cursorIds.size(), new HashSet<>(cursorIds).size());
    }

    @Test
    void error401BadKey() {
        MailboltClient bad = MailboltClient.builder().apiKey("svc_live_notAKey0000000000000000").build();
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> bad.account().get());
        assertEquals(401, e.status());
        assertTrue(Set.of("INVALID_API_KEY", "UNAUTHORIZED").contains(e.code()), e.code());
        assertNotNull(e.requestId());
        assertNotNull(e.apiMessage());
    }

    @Test
    void error403NarrowKey() {
        PermissionDeniedException e = assertThrows(PermissionDeniedException.class,
                () -> keyed("MAILBOLT_NARROW_API_KEY").suppressions().list());
        assertEquals(403, e.status());
        assertEquals("INSUFFICIENT_SCOPES", e.code());
        assertEquals("suppressions:read", e.details().get("required_scope"));
        assertNotNull(e.requestId());
        // the scope it has works
        assertEquals(200, keyed("MAILBOLT_NARROW_API_KEY").account().get().status());
    }

    @Test
    void error404OtherTenant() {
        String id = test.messages().send(message("mine@example.net")).getString("id");
        NotFoundException e = assertThrows(NotFoundException.class, () -> keyed("MAILBOLT_OTHER_API_KEY").messages().get(id));
        assertEquals(404, e.status());
        assertEquals("NOT_FOUND", e.code());
        assertNotNull(e.requestId());
    }

    @Test
    void error409AndIdempotentReplay() {
        String key = "java-" + UUID.randomUUID();
        Map<String, Object> m = message("idem@example.net");
        ApiResponse first = test.messages().send(m, RequestOptions.idempotencyKey(key));
        ApiResponse again = test.messages().send(m, RequestOptions.idempotencyKey(key));
        assertEquals(first.getString("id"), again.getString("id"));
        assertFalse(first.idempotentReplayed());
        assertTrue(again.idempotentReplayed());
        assertEquals("true", again.headers().first("idempotent-replayed"));

        Map<String, Object> other = message("someone-else@example.net");
        ConflictException e = assertThrows(ConflictException.class,
                () -> test.messages().send(other, RequestOptions.idempotencyKey(key)));
        assertEquals(409, e.status());
        assertEquals("IDEMPOTENCY_CONFLICT", e.code());
        assertNotNull(e.requestId());
    }

    @Test
    void error422UnverifiedDomain() {
        UnprocessableEntityException e = assertThrows(UnprocessableEntityException.class,
                () -> live.messages().send(message("ann@example.net")));
        assertEquals(422, e.status());
        assertEquals("DOMAIN_NOT_VERIFIED", e.code());
        assertEquals("example.com", e.details().get("domain"));
        assertNotNull(e.requestId());
    }

    @Test
    void error400Validation() {
        BadRequestException e = assertThrows(BadRequestException.class,
                () -> test.messages().send(Map.of("from", "sender@example.com")));
        assertEquals("VALIDATION_ERROR", e.code());
        assertEquals("to", e.details().get("field"));
    }

    @Test
    void rateLimitedCallIsRetriedAndSucceeds() {
        List<Duration> waits = new ArrayList<>();
        MailboltClient limited = MailboltClient.builder().apiKey(env("MAILBOLT_LIMITED_API_KEY"))
                .sleeper(d -> { waits.add(d); Thread.sleep(d.toMillis()); }).build();
        // 1 request per second: the second of two quick calls gets 429 and waits for Retry-After.
        // A call may land just after a second boundary, so allow a few.
        for (int i = 0; i < 6 && waits.isEmpty(); i++) {
            ApiResponse r = limited.account().get();
            assertEquals(200, r.status());
            assertEquals(1, r.rateLimit().limit());
        }
        assertFalse(waits.isEmpty(), "no 429 was met");
        assertTrue(waits.get(0).toMillis() >= 1000, "Retry-After honoured: " + waits);

        // with retries off the 429 surfaces, typed
        MailboltClient noRetry = MailboltClient.builder().apiKey(env("MAILBOLT_LIMITED_API_KEY")).maxRetries(0).build();
        RateLimitException seen = null;
        for (int i = 0; i < 6 && seen == null; i++) {
            try {
                noRetry.account().get();
            } catch (RateLimitException e) {
                seen = e;
            }
        }
        assertNotNull(seen, "no 429 surfaced");
        assertEquals("RATE_LIMIT_EXCEEDED", seen.code());
        assertTrue(seen.retryAfterSeconds() >= 1);
        assertEquals(0, seen.rateLimit().remaining());
    }

    @Test
    void otherResources() {
        assertEquals(200, live.account().get().status());
        assertEquals(200, live.analytics().summary().status());
        assertEquals(200, live.ips().list().status());
        assertEquals(200, live.ips().listPools().status());
        ApiResponse tpl = live.templates().create(Map.of("name", "welcome", "subject", "Hi {{name}}", "text", "Hello {{name}}"));
        String tid = tpl.getString("id");
        assertEquals("Hi Ann", live.templates().render(tid, Map.of("data", Map.of("name", "Ann"))).getString("subject"));
        UnprocessableEntityException e = assertThrows(UnprocessableEntityException.class,
                () -> live.templates().render(tid, Map.of("data", Map.of())));
        assertEquals("TEMPLATE_RENDER_FAILED", e.code());
        assertEquals(2L, ((Number) live.templates().update(tid, Map.of("subject", "Hey {{name}}")).get("version")).longValue());
        assertEquals(2, live.templates().listVersions(tid).items().size());
        assertEquals("Hi {{name}}", live.templates().get(tid, 1).getString("subject"));
        ApiResponse key = live.apiKeys().create(Map.of("name", "java-suite", "scopes", List.of("account:read")));
        assertEquals(200, live.apiKeys().get(key.getString("id")).status());
        live.apiKeys().revoke(key.getString("id"));
        List<List<Object>> done = new java.util.ArrayList<>();
        for (Map<String, Object> entry : live.account().auditLog(Map.of("limit", 50)).items()) {
            if (key.getString("id").equals(entry.get("target"))) {
                done.add(List.of(entry.get("action"), entry.get("actor_kind")));
            }
        }
        assertEquals(List.of(List.of("api_key.revoke", "api_key"), List.of("api_key.create", "api_key")), done);
    }

    @Test
    void examplesRun() throws Exception {
        Path run = Path.of("examples/run");
        assumeTrue(Files.isExecutable(run), "examples/run not found from " + Path.of("").toAbsolutePath());
        ProcessBuilder pb = new ProcessBuilder(run.toString(), "send");
        pb.environment().put("MAILBOLT_API_KEY", env("MAILBOLT_TEST_API_KEY"));
        pb.environment().put("MAILBOLT_EXAMPLE_FROM", "sender@example.com");
        pb.environment().put("MAILBOLT_EXAMPLE_TO", "example@example.net");
        String[] out = exec(pb, null);
        assertEquals("0", out[0], out[2]);
        assertTrue(out[1].matches("[0-9a-f-]{36}\n"), "stdout: " + out[1]);
        assertEquals("example@example.net", ((List<?>) test.messages().get(out[1].trim()).get("to")).get(0));

        @SuppressWarnings("unchecked")
        Map<String, Object> v = (Map<String, Object>) Json.parse(Files.readAllBytes(Path.of(env("MAILBOLT_WEBHOOK_VECTOR"))));
        for (String[] c : new String[][] {
                {(String) v.get("body"), (String) v.get("secret"), "0", "valid\n"},
                {v.get("body") + " ", (String) v.get("secret"), "1", "invalid\n"},
                {(String) v.get("body"), v.get("previous_secret") + "," + v.get("secret"), "0", "valid\n"}}) {
            ProcessBuilder vb = new ProcessBuilder(run.toString(), "verify");
            vb.environment().put("MAILBOLT_EXAMPLE_WEBHOOK_SECRET", c[1]);
            vb.environment().put("MAILBOLT_EXAMPLE_SIGNATURE", (String) v.get("signature"));
            vb.environment().put("MAILBOLT_EXAMPLE_TIMESTAMP", String.valueOf(v.get("timestamp")));
            vb.environment().put("MAILBOLT_EXAMPLE_NOW", String.valueOf(((Number) v.get("timestamp")).longValue() + 10));
            String[] r = exec(vb, c[0].getBytes(StandardCharsets.UTF_8));
            assertEquals(c[2], r[0], r[2]);
            assertEquals(c[3], r[1]);
        }
    }

    static String[] exec(ProcessBuilder pb, byte[] stdin) throws IOException, InterruptedException {
        Path err = Files.createTempFile("mailbolt-java-run", ".err");
        try {
            pb.redirectError(err.toFile());
            Process p = pb.start();
            try (var in = p.getOutputStream()) {
                if (stdin != null) in.write(stdin);
            }
            byte[] out = p.getInputStream().readAllBytes();
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "examples/run hung");
            return new String[] {String.valueOf(p.exitValue()), new String(out, StandardCharsets.UTF_8), Files.readString(err)};
        } finally {
            Files.deleteIfExists(err);
        }
    }

    @Test
    void inboundDomainsRoutesAndRaw() {
        String name = "in-" + UUID.randomUUID().toString().substring(0, 8) + ".example.com";
        ApiResponse d = live.inbound().createDomain(name);
        assertEquals(201, d.status());
        assertEquals(name, d.getString("name"));
        assertEquals("pending", d.getString("status"));
        String id = d.getString("id");
        assertEquals(name, live.inbound().getDomain(id).getString("name"));
        assertTrue(live.inbound().listDomains(Map.of("limit", 200)).items().stream().anyMatch(x -> id.equals(x.get("id"))));
        Map<String, Object> hook = new LinkedHashMap<>();
        hook.put("url", "https://hooks.example.com/" + UUID.randomUUID());
        hook.put("events", List.of("message.delivered"));
        String hookId = live.webhooks().create(hook).getString("id");
        ApiResponse r = live.inbound().createRoute(id, "support", hookId);
        assertEquals(201, r.status());
        assertEquals("support", r.getString("pattern"));
        String routeId = r.getString("id");
        assertEquals(id, live.inbound().getRoute(routeId).getString("domain_id"));
        assertTrue(live.inbound().listRoutes(null).items().stream().anyMatch(x -> routeId.equals(x.get("id"))));
        assertThrows(ConflictException.class, () -> live.inbound().createRoute(id, "support", hookId));
        assertThrows(NotFoundException.class, () -> keyed("MAILBOLT_OTHER_API_KEY").inbound().getDomain(id));
        NotFoundException e = assertThrows(NotFoundException.class, () -> live.inbound().raw(UUID.randomUUID().toString()));
        assertEquals("NOT_FOUND", e.code());
        assertEquals(204, live.inbound().deleteRoute(routeId).status());
        assertEquals(204, live.inbound().deleteDomain(id).status());
        live.webhooks().delete(hookId);
    }
}
