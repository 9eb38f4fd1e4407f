package dev.mailbolt;

import java.util.Map;

/** 410: removed on purpose (a cancelled message, a sunset version). */
public class GoneException extends ApiException {
    private static final long serialVersionUID = 1L;

    public GoneException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
