package dev.mailbolt;

/** The base of every exception the client throws (API errors, transport failures, JSON errors). */
public class MailboltException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MailboltException(String message) {
        super(message);
    }

    public MailboltException(String message, Throwable cause) {
        super(message, cause);
    }
}
