package dev.mailbolt;

import java.util.Map;

/** Sending analytics. */
public final class Analytics {
    private final MailboltClient c;

    Analytics(MailboltClient c) {
        this.c = c;
    }

    /** The summary for the whole history. */
    public ApiResponse summary() {
        return summary(null);
    }

    /** The summary; query keys {@code from}, {@code to}, {@code campaign_id}, {@code domain}. */
    public ApiResponse summary(Map<String, ?> query) {
        return c.get("/v1/analytics/summary", query);
    }
}
