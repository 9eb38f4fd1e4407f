package dev.mailbolt;

import java.util.Map;

/** 403: the key lacks a scope (FORBIDDEN, INSUFFICIENT_SCOPES). */
public class PermissionDeniedException extends ApiException {
    private static final long serialVersionUID = 1L;

    public PermissionDeniedException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
