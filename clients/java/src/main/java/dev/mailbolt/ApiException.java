package dev.mailbolt;

import java.util.Map;

/**
 * An error answer of the API (spec §7): HTTP status, the programmatic {@code code}, the
 * human-readable message, optional {@code details} and the {@code X-Request-Id} of the answer.
 * Subclasses name the status classes; match on {@link #code()}, never on the message.
 */
public class ApiException extends MailboltException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String code;
    private final String apiMessage;
    private final Map<String, Object> details;
    private final transient Headers headers;

    public ApiException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status + " " + code + ": " + message);
        this.status = status;
        this.code = code;
        this.apiMessage = message;
        this.details = details == null ? Map.of() : details;
        this.headers = headers == null ? new Headers(Map.of()) : headers;
    }

    public int status() { return status; }

    /** The error code, e.g. {@code NOT_FOUND}; {@code HTTP_<status>} when the body had none. */
    public String code() { return code; }

    /** The server's message, for people. */
    public String apiMessage() { return apiMessage; }

    /** {@code error.details}; empty when absent. */
    public Map<String, Object> details() { return details; }

    /** The answer's X-Request-Id, or null. */
    public String requestId() { return headers.first("X-Request-Id"); }

    public Headers headers() { return headers; }

    public RateLimit rateLimit() { return RateLimit.from(headers); }

    /** Seconds from Retry-After, or -1. */
    public long retryAfterSeconds() {
        String v = headers.first("Retry-After");
        if (v == null) return -1;
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Builds the exception of the status's class. */
    static ApiException of(int status, String code, String message, Map<String, Object> details, Headers h) {
        switch (status) {
            case 400: return new BadRequestException(status, code, message, details, h);
            case 401: return new AuthenticationException(status, code, message, details, h);
            case 403: return new PermissionDeniedException(status, code, message, details, h);
            case 404: return new NotFoundException(status, code, message, details, h);
            case 409: return new ConflictException(status, code, message, details, h);
            case 410: return new GoneException(status, code, message, details, h);
            case 422: return new UnprocessableEntityException(status, code, message, details, h);
            case 429: return new RateLimitException(status, code, message, details, h);
            default:
                if (status >= 500) return new ServerException(status, code, message, details, h);
                return new ApiException(status, code, message, details, h);
        }
    }
}
