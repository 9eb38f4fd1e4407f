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
}
