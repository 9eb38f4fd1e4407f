package dev.mailbolt;

import java.util.Map;

/** 409: resource conflict or reused Idempotency-Key (CONFLICT, IDEMPOTENCY_CONFLICT). */
public class ConflictException extends ApiException {
    private static final long serialVersionUID = 1L;

    public ConflictException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
