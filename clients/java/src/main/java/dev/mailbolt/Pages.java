package dev.mailbolt;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Every page of a list, fetched lazily as it is iterated: {@code for (Page p : pages)}. Works in
 * both modes: give {@code page} in the query for page mode, leave it out for cursor mode.
 * {@link #items()} walks the items of all pages.
 */
public final class Pages implements Iterable<Page> {
    private final MailboltClient client;
    private final String path;
    private final Map<String, ?> query;

    Pages(MailboltClient client, String path, Map<String, ?> query) {
        this.client = client;
        this.path = path;
        this.query = query == null ? Map.of() : query;
    }

    @Override
    public Iterator<Page> iterator() {
        return new Iterator<>() {
            private Page current;
            private boolean started;

            @Override
            public boolean hasNext() {
                return !started || current.hasNext();
            }

            @Override
            public Page next() {
                if (!hasNext()) throw new NoSuchElementException();
                current = started ? current.next() : client.page(path, query);
                started = true;
                return current;
            }
        };
    }

    /** Every item of every page, in order. */
    public Iterable<Map<String, Object>> items() {
        return () -> new Iterator<>() {
            private final Iterator<Page> pages = Pages.this.iterator();
            private Iterator<Map<String, Object>> items = List.<Map<String, Object>>of().iterator();

            @Override
            public boolean hasNext() {
                while (!items.hasNext()) {
                    if (!pages.hasNext()) return false;
                    items = pages.next().items().iterator();
                }
                return true;
            }

            @Override
            public Map<String, Object> next() {
                if (!hasNext()) throw new NoSuchElementException();
                return items.next();
            }
        };
    }
}
