package dev.mailbolt;

import java.util.Map;

/** 429: rate limit or quota exceeded (RATE_LIMIT_EXCEEDED, QUOTA_EXCEEDED); see retryAfterSeconds(). */
public class RateLimitException extends ApiException {
    private static final long serialVersionUID = 1L;

    public RateLimitException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
