package dev.mailbolt;

import java.util.Map;

/** 401: missing, invalid, revoked or expired key (UNAUTHORIZED, INVALID_API_KEY, TOKEN_EXPIRED). */
public class AuthenticationException extends ApiException {
    private static final long serialVersionUID = 1L;

    public AuthenticationException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
