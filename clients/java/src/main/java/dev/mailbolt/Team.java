package dev.mailbolt;

import java.util.Map;

/** Team members. */
public final class Team {
    private final MailboltClient c;

    Team(MailboltClient c) {
        this.c = c;
    }

    /** Lists team members: one page (cursor mode, or page mode when the query has {@code page}). */
    public Page list() {
        return list(null);
    }

    /** Lists team members: one page; query keys such as {@code limit}, {@code cursor}, {@code page}. */
    public Page list(Map<String, ?> query) {
        return c.page("/v1/team", query);
    }

    /** Lists team members: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages listAll(Map<String, ?> query) {
        return c.pages("/v1/team", query);
    }

    /** Invites a member ({@code email}, {@code role}). */
    public ApiResponse invite(Map<String, ?> params, RequestOptions... options) {
        return c.request("POST", "/v1/team/invite", params, RequestOptions.first(options));
    }
}
