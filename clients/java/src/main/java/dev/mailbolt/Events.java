package dev.mailbolt;

import java.util.Map;

/** The event history (delivery, open, click, …). */
public final class Events {
    private final MailboltClient c;

    Events(MailboltClient c) {
        this.c = c;
    }

    /** Lists events, newest first: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists events, newest first: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/events", query);
    }

    /** Lists events, newest first: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/events", query);
    }
}
