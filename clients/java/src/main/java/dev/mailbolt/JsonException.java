package dev.mailbolt;

/** Thrown when text is not valid JSON, or a value cannot be written as JSON. */
public class JsonException extends MailboltException {
    private static final long serialVersionUID = 1L;
    private final int position;

    public JsonException(String message, int position) {
        super(position >= 0 ? message + " at offset " + position : message);
        this.position = position;
    }

    /** The offset in the input where parsing failed, or -1 when writing failed. */
    public int position() {
        return position;
    }
}
