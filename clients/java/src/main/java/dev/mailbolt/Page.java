package dev.mailbolt;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One page of a list, in either mode: cursor mode ({@code has_more}, {@code cursor}) or page mode
 * ({@code page}, {@code total} and the {@code Link} header).
 */
public final class Page extends ApiResponse {
    private static final Pattern LINK = Pattern.compile("<([^>]*)>\\s*;\\s*rel=\"?([a-z]+)\"?");
    private final transient MailboltClient client;
    private final String path;
    private final Map<String, ?> query;

    Page(MailboltClient client, String path, Map<String, ?> query, ApiResponse r) {
        super(r.status(), r.headers(), r.body());
        this.client = client;
        this.path = path;
        this.query = query == null ? Map.of() : query;
    }

    /** True in page mode (the request had {@code page}). */
    public boolean pageMode() {
        return data().containsKey("page") || query.containsKey("page");
    }

    /** Cursor mode: the cursor of the next page, or null on the last page. */
    public String nextCursor() {
        Object c = data().get("cursor");
        return Boolean.TRUE.equals(data().get("has_more")) && c instanceof String ? (String) c : null;
    }

    /** Page mode: the {@code Link} relations (next, prev, first, last) to their relative URLs. */
    public Map<String, String> links() {
        Map<String, String> out = new LinkedHashMap<>();
        for (String h : headers().all("Link")) {
            Matcher m = LINK.matcher(h);
            while (m.find()) out.put(m.group(2), m.group(1));
        }
        return out;
    }

    /** Whether another page follows. */
    public boolean hasNext() {
        if (!pageMode()) return nextCursor() != null;
        if (!headers().all("Link").isEmpty()) return links().containsKey("next");
        Object page = data().get("page"), limit = data().get("limit"), total = data().get("total");
        if (page instanceof Number && limit instanceof Number && total instanceof Number) {
            return ((Number) page).longValue() * ((Number) limit).longValue() < ((Number) total).longValue();
        }
        return false;
    }

    /** Fetches the next page; call only when {@link #hasNext()}. */
    public Page next() {
        if (!hasNext()) throw new IllegalStateException("no next page");
        Map<String, Object> q = new LinkedHashMap<>(query);
        if (pageMode()) {
            String next = links().get("next");
            if (next != null && next.startsWith("/")) {
                // The Link URL keeps the request's other parameters: follow it as given.
                return new Page(client, path, pageOf(next, q), client.request("GET", next, null, null));
            }
            q.put("page", ((Number) data().getOrDefault("page", 1L)).longValue() + 1);
        } else {
            q.put("cursor", nextCursor());
        }
        return client.page(path, q);
    }

    private static Map<String, Object> pageOf(String url, Map<String, Object> q) {
        Matcher m = Pattern.compile("[?&]page=(\\d+)").matcher(url);
        if (m.find()) q.put("page", Long.parseLong(m.group(1)));
        return q;
    }
}
