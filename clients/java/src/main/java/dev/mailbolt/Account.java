package dev.mailbolt;

import java.util.Map;

/** The calling account. */
public final class Account {
    private final MailboltClient c;

    Account(MailboltClient c) {
        this.c = c;
    }

    /** The account, its plan and limits. */
    public ApiResponse get() {
        return c.get("/v1/account", null);
    }

    /** The account's audit log, newest first: one page (query keys {@code limit}, {@code cursor}, {@code page}). */
    public Page auditLog(Map<String, ?> query) {
        return c.page("/v1/audit-log", query);
    }

    /** The account's audit log: every page, fetched as iterated (see {@link Pages#items()}). */
    public Pages auditLogAll(Map<String, ?> query) {
        return c.pages("/v1/audit-log", query);
    }
}
