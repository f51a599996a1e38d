/**
 * Split the user-info out of a URL (`https://user:pass@host/…`), which Node's `fetch` refuses and
 * would otherwise quote in its error: the URL without it, and the `Authorization: Basic` header
 * value it stands for (user and password percent-decoded, as a browser sends them).
 * @param raw the URL as configured.
 * @returns the URL to request and the header value, or undefined when the URL carries none.
 * @throws TypeError for a string that is not a URL (the message does not quote it).
 */
export function splitCredentials(raw: string | URL): {
  url: URL;
  authorization: string | undefined;
} {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError('the configured URL is not a valid URL');
  }
  if (url.username === '' && url.password === '') return { url, authorization: undefined };
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  return { url, authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` };
}
