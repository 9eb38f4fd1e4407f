package dev.mailbolt;

/**
 * A webhook request failed verification. {@link #reason()} says why; {@link #recommendedStatus()}
 * is the answer spec §6 recommends (400 for a stale timestamp or malformed header, 401 otherwise).
 */
public class WebhookVerificationException extends MailboltException {
    private static final long serialVersionUID = 1L;

    /** Why verification failed. */
    public enum Reason { MISSING_SIGNATURE, MALFORMED_SIGNATURE, STALE_TIMESTAMP, SIGNATURE_MISMATCH }

    private final Reason reason;

    public WebhookVerificationException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }

    public int recommendedStatus() {
        return reason == Reason.STALE_TIMESTAMP || reason == Reason.MALFORMED_SIGNATURE ? 400 : 401;
    }
}
