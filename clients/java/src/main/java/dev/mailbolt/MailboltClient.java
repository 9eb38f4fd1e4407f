package dev.mailbolt;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The Mailbolt API client. Build one with {@link #builder()} (or {@link #fromEnv()}), then use
 * its resources: {@code client.messages().send(...)}, {@code client.suppressions().list()}, …
 *
 * <p>Not given in code, the API key, base URL and extra CA roots come from
 * {@code MAILBOLT_API_KEY}, {@code MAILBOLT_BASE_URL} and {@code MAILBOLT_CA_FILE}. TLS is limited
 * to 1.2 and 1.3. Only the transient codes {@code RATE_LIMIT_EXCEEDED}, {@code SERVICE_UNAVAILABLE}
 * and {@code GATEWAY_TIMEOUT} are retried, with exponential backoff and jitter, honouring
 * {@code Retry-After}. Every write carries an {@code Idempotency-Key} (generated unless given),
 * the same one on each of its retries. Instances are thread-safe.
 */
public final class MailboltClient {
    public static final String VERSION = "0.1.0";
    public static final String USER_AGENT = "mailbolt-java/" + VERSION;
    public static final String DEFAULT_BASE_URL = "https://api.mailbolt.dev";
    static final Set<String> TRANSIENT = Set.of("RATE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE", "GATEWAY_TIMEOUT");
    static final String[] TLS_PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

    /** Waits between retries; replaceable in tests. */
    @FunctionalInterface
    public interface Sleeper {
        void sleep(Duration d) throws InterruptedException;
    }

    private final String baseUrl;
    private final String apiKey;
    private final int maxRetries;
    private final Duration baseDelay;
    private final Duration maxDelay;
    private final Duration timeout;
    private final Sleeper sleeper;
    private final HttpClient http;

    private final Messages messages = new Messages(this);
    private final Events events = new Events(this);
    private final ApiKeys apiKeys = new ApiKeys(this);
    private final Suppressions suppressions = new Suppressions(this);
    private final Domains domains = new Domains(this);
    private final Templates templates = new Templates(this);
    private final Webhooks webhooks = new Webhooks(this);
    private final Team team = new Team(this);
    private final Analytics analytics = new Analytics(this);
    private final Ips ips = new Ips(this);
    private final Account account = new Account(this);
    private final Grader grader = new Grader(this);
    private final Inbound inbound = new Inbound(this);

    private MailboltClient(Builder b) {
        String base = b.baseUrl != null ? b.baseUrl : env("MAILBOLT_BASE_URL");
        if (base == null || base.isBlank()) base = DEFAULT_BASE_URL;
        base = base.trim();
        while (base.endsWith("/")) base = base.substring(0, base.length() - 1);
        if (base.endsWith("/v1")) base = base.substring(0, base.length() - 3);
        this.baseUrl = base;
        String key = b.apiKey != null ? b.apiKey : env("MAILBOLT_API_KEY");
        this.apiKey = key == null || key.isBlank() ? null : key.trim();
        if (b.maxRetries < 0) throw new IllegalArgumentException("maxRetries must be 0 or more");
        this.maxRetries = b.maxRetries;
        this.baseDelay = b.baseDelay;
        this.maxDelay = b.maxDelay;
        this.timeout = b.timeout;
        this.sleeper = b.sleeper;
        String caFile = b.caFile != null ? b.caFile : env("MAILBOLT_CA_FILE");
        SSLContext ctx = sslContext(caFile == null || caFile.isBlank() ? null : Path.of(caFile));
        SSLParameters params = ctx.getDefaultSSLParameters();
        List<String> supported = Arrays.asList(ctx.getSupportedSSLParameters().getProtocols());
        params.setProtocols(Arrays.stream(TLS_PROTOCOLS).filter(supported::contains).toArray(String[]::new));
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(b.connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .sslContext(ctx)
                .sslParameters(params)
                .build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A client configured entirely from the environment. */
    public static MailboltClient fromEnv() {
        return builder().build();
    }

    private static String env(String name) {
        return System.getenv(name);
    }

    /** An SSLContext trusting the JDK's default roots plus the PEM certificates of caFile. */
    static SSLContext sslContext(Path caFile) {
        try {
            SSLContext ctx = SSLContext.getInstance("TLS");
            if (caFile == null) {
                ctx.init(null, null, null);
                return ctx;
            }
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            TrustManagerFactory def = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            def.init((KeyStore) null);
            int n = 0;
            for (TrustManager tm : def.getTrustManagers()) {
                if (tm instanceof X509TrustManager) {
                    for (X509Certificate c : ((X509TrustManager) tm).getAcceptedIssuers()) {
                        ks.setCertificateEntry("default-" + n++, c);
                    }
                }
            }
            int extra = 0;
            try (InputStream in = Files.newInputStream(caFile)) {
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    ks.setCertificateEntry("mailbolt-ca-" + extra++, c);
                }
            }
            if (extra == 0) throw new MailboltException("no certificate in MAILBOLT_CA_FILE " + caFile);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new MailboltException("cannot set up TLS with " + caFile + ": " + e.getMessage(), e);
        }
    }

    public String baseUrl() { return baseUrl; }

    public int maxRetries() { return maxRetries; }

    public Messages messages() { return messages; }

    public Events events() { return events; }

    public ApiKeys apiKeys() { return apiKeys; }

    public Suppressions suppressions() { return suppressions; }

    public Domains domains() { return domains; }

    public Templates templates() { return templates; }

    public Webhooks webhooks() { return webhooks; }

    public Team team() { return team; }

    public Analytics analytics() { return analytics; }

    public Ips ips() { return ips; }

    public Account account() { return account; }

    public Grader grader() { return grader; }

    public Inbound inbound() { return inbound; }

    /** URL-encodes one path segment. */
    static String seg(String s) {
        if (s == null || s.isEmpty()) throw new IllegalArgumentException("a path parameter is empty");
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    static String query(Map<String, ?> q) {
        if (q == null || q.isEmpty()) return "";
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, ?> e : q.entrySet()) {
            Object v = e.getValue();
            if (v == null) continue;
            Collection<?> vals = v instanceof Collection ? (Collection<?>) v : List.of(v);
            for (Object one : vals) {
                sb.append(sb.length() == 0 ? '?' : '&')
                        .append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(String.valueOf(one), StandardCharsets.UTF_8));
            }
        }
        return sb.toString();
    }

    /**
     * Sends one request and decodes the answer, retrying transient errors. {@code pathAndQuery}
     * starts with {@code /v1/}. An escape hatch for routes newer than this library.
     */
    public ApiResponse request(String method, String pathAndQuery, Object body, RequestOptions options) {
        return exchange(method, pathAndQuery, body, options, true);
    }

    /** A GET whose answer is text, not JSON (the CSV export): its body as a string. */
    String requestText(String pathAndQuery, RequestOptions options) {
        return (String) exchange("GET", pathAndQuery, null, options, false).body();
    }

    private ApiResponse exchange(String method, String pathAndQuery, Object body, RequestOptions options, boolean json) {
        boolean write = !method.equals("GET") && !method.equals("HEAD");
        String idem = options != null && options.idempotencyKey() != null ? options.idempotencyKey()
                : write ? UUID.randomUUID().toString() : null;
        byte[] payload = body == null ? null : Json.write(body).getBytes(StandardCharsets.UTF_8);
        URI uri = URI.create(baseUrl + pathAndQuery);
        for (int attempt = 0; ; attempt++) {
            HttpRequest.Builder rb = HttpRequest.newBuilder(uri)
                    .timeout(timeout)
                    .header("User-Agent", USER_AGENT)
                    .header("Accept", "application/json");
            if (apiKey != null) rb.header("X-API-Key", apiKey);
            if (idem != null) rb.header("Idempotency-Key", idem);
            if (payload != null) {
                rb.header("Content-Type", "application/json");
                rb.method(method, HttpRequest.BodyPublishers.ofByteArray(payload));
            } else {
                rb.method(method, HttpRequest.BodyPublishers.noBody());
            }
            HttpResponse<byte[]> resp;
            try {
                resp = http.send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (IOException e) {
                throw new MailboltException(method + " " + pathAndQuery + ": " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MailboltException("interrupted", e);
            }
            Headers headers = new Headers(resp.headers().map());
            int status = resp.statusCode();
            byte[] raw = resp.body();
            if (status >= 200 && status < 300) {
                String type = headers.first("Content-Type");
                Object decoded = !json ? new String(raw == null ? new byte[0] : raw, StandardCharsets.UTF_8)
                        : raw == null || raw.length == 0 ? null
                        : type != null && !type.contains("json") ? raw // message/rfc822: the bytes
                        : Json.parse(raw);
                return new ApiResponse(status, headers, decoded);
            }
            ApiException err = error(status, headers, raw);
            if (attempt >= maxRetries || !TRANSIENT.contains(err.code())) throw err;
            try {
                sleeper.sleep(delay(attempt, headers));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw err;
            }
        }
    }

    @SuppressWarnings("unchecked")
    static ApiException error(int status, Headers headers, byte[] raw) {
        String code = "HTTP_" + status;
        String message = "HTTP " + status;
        Map<String, Object> details = null;
        try {
            Object o = raw == null || raw.length == 0 ? null : Json.parse(raw);
            if (o instanceof Map && ((Map<String, Object>) o).get("error") instanceof Map) {
                Map<String, Object> e = (Map<String, Object>) ((Map<String, Object>) o).get("error");
                if (e.get("code") instanceof String) code = (String) e.get("code");
                if (e.get("message") instanceof String) message = (String) e.get("message");
                if (e.get("details") instanceof Map) details = (Map<String, Object>) e.get("details");
            }
        } catch (JsonException ignored) {
            // not the error envelope (a proxy's page, say): keep the status-derived code
        }
        return ApiException.of(status, code, message, details, headers);
    }

    /** Retry-After when present, else exponential backoff with jitter, capped at maxDelay. */
    Duration delay(int attempt, Headers headers) {
        long jitterMs = ThreadLocalRandom.current().nextLong(0, 100);
        Duration after = retryAfter(headers.first("Retry-After"));
        if (after != null) return after.plusMillis(jitterMs);
        long base = baseDelay.toMillis() << Math.min(attempt, 20);
        long capped = Math.min(base, maxDelay.toMillis());
        long withJitter = capped / 2 + ThreadLocalRandom.current().nextLong(0, capped / 2 + 1);
        return Duration.ofMillis(withJitter);
    }

    static Duration retryAfter(String v) {
        if (v == null || v.isBlank()) return null;
        try {
            long s = Long.parseLong(v.trim());
            return s < 0 ? null : Duration.ofSeconds(s);
        } catch (NumberFormatException e) {
            try {
                ZonedDateTime at = ZonedDateTime.parse(v.trim(), DateTimeFormatter.RFC_1123_DATE_TIME);
                Duration d = Duration.between(ZonedDateTime.now(at.getZone()), at);
                return d.isNegative() ? Duration.ZERO : d;
            } catch (RuntimeException e2) {
                return null;
            }
        }
    }

    ApiResponse get(String path, Map<String, ?> query) {
        return request("GET", path + query(query), null, null);
    }

    /** A single page of a paginated list. */
    Page page(String path, Map<String, ?> query) {
        return new Page(this, path, query, get(path, query));
    }

    /** Every page of a list, from the query's page (page mode) or from the start (cursor mode). */
    Pages pages(String path, Map<String, ?> query) {
        return new Pages(this, path, query);
    }

    static Map<String, ?> orEmpty(Map<String, ?> m) {
        return m == null ? Map.of() : m;
    }

    static List<Object> listOf(Object... items) {
        return new ArrayList<>(Arrays.asList(items));
    }

    /** Configures a {@link MailboltClient}. */
    public static final class Builder {
        private String baseUrl;
        private String apiKey;
        private String caFile;
        private int maxRetries = 3;
        private Duration baseDelay = Duration.ofMillis(500);
        private Duration maxDelay = Duration.ofSeconds(30);
        private Duration timeout = Duration.ofSeconds(30);
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Sleeper sleeper = d -> Thread.sleep(d.toMillis());

        private Builder() {}

        /** Default: MAILBOLT_BASE_URL. */
        public Builder baseUrl(String v) { this.baseUrl = v; return this; }

        /** Default: MAILBOLT_API_KEY. */
        public Builder apiKey(String v) { this.apiKey = v; return this; }

        /** PEM file of extra trusted roots, added to the JDK's. Default: MAILBOLT_CA_FILE. */
        public Builder caFile(String v) { this.caFile = v; return this; }

        /** Retries of a transient error (default 3; 0 disables). */
        public Builder maxRetries(int v) { this.maxRetries = v; return this; }

        /** First backoff delay, doubled per retry (default 500 ms). */
        public Builder baseDelay(Duration v) { this.baseDelay = v; return this; }

        /** Cap of a computed backoff delay (default 30 s). */
        public Builder maxDelay(Duration v) { this.maxDelay = v; return this; }

        /** Per-request timeout (default 30 s). */
        public Builder timeout(Duration v) { this.timeout = v; return this; }

        public Builder connectTimeout(Duration v) { this.connectTimeout = v; return this; }

        /** How the client waits between retries (tests inject a recorder). */
        public Builder sleeper(Sleeper v) { this.sleeper = v; return this; }

        public MailboltClient build() {
            return new MailboltClient(this);
        }
    }
}
