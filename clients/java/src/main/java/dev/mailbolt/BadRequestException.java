package dev.mailbolt;

import java.util.Map;

/** 400: invalid JSON, missing fields, validation (VALIDATION_ERROR, INVALID_INPUT, INVALID_TEMPLATE). */
public class BadRequestException extends ApiException {
    private static final long serialVersionUID = 1L;

    public BadRequestException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
