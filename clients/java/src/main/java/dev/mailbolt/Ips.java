package dev.mailbolt;

import java.util.Map;

/** Dedicated IPs and IP pools (answered whole, not paginated). */
public final class Ips {
    private final MailboltClient c;

    Ips(MailboltClient c) {
        this.c = c;
    }

    /** Lists dedicated IPs. */
    public ApiResponse list() {
        return c.get("/v1/ips", null);
    }

    /** Lists IP pools. */
    public ApiResponse listPools() {
        return c.get("/v1/ips/pools", null);
    }
}
