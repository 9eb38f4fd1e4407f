package dev.mailbolt;

import java.util.Map;

/** 422: a business rule refused the request (DOMAIN_NOT_VERIFIED, TEMPLATE_RENDER_FAILED); retrying unchanged cannot succeed. */
public class UnprocessableEntityException extends ApiException {
    private static final long serialVersionUID = 1L;

    public UnprocessableEntityException(int status, String code, String message, Map<String, Object> details, Headers headers) {
        super(status, code, message, details, headers);
    }
}
