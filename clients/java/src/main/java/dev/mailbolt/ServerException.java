package dev.mailbolt;

import java.util.Map;

/** 5xx: server or dependency failure (INTERNAL_ERROR, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT). */
public class ServerException extends ApiException {
    private static final long serialVersionUID = 1L;

    public ServerException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
