package dev.mailbolt;

import java.util.Map;

/** 404: the resource does not exist or belongs to another tenant (NOT_FOUND). */
public class NotFoundException extends ApiException {
    private static final long serialVersionUID = 1L;

    public NotFoundException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
