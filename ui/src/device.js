// @ts-check
// The name a browser proposes for itself when it pairs: what a person would
// call the device, from its user agent ("Chrome on Android (Pixel 7)",
// "Safari on iPhone"), editable on the pair page.

/** The longest device name proposed (the operator may type another). */
export const MAX_DEVICE_NAME = 60;

/**
 * @param {string} userAgent @returns {string}
 */
export function deviceName(userAgent) {
  const ua = userAgent || '';
  const browser = /Edg(A|iOS)?\//.test(ua) ? 'Edge'
    : /Firefox\/|FxiOS\//.test(ua) ? 'Firefox'
      : /OPR\//.test(ua) ? 'Opera'
        : /SamsungBrowser\//.test(ua) ? 'Samsung Internet'
          : /Chrome\/|CriOS\//.test(ua) ? 'Chrome'
            : /Safari\//.test(ua) ? 'Safari'
              : 'Browser';
  let device = 'a device';
  const android = ua.match(/Android[^;)]*;\s*([^;)]+?)(?:\s+Build\/[^;)]*)?\)/);
  if (/iPhone/.test(ua)) device = 'iPhone';
  else if (/iPad/.test(ua)) device = 'iPad';
  else if (android) {
    // Newer Chrome says only "K" for the model.
    const model = android[1].trim();
    device = model && model !== 'K' && !/^wv$/.test(model) ? `Android (${model})` : 'Android';
  } else if (/Android/.test(ua)) device = 'Android';
  else if (/CrOS/.test(ua)) device = 'ChromeOS';
  else if (/Mac OS X|Macintosh/.test(ua)) device = 'macOS';
  else if (/Windows/.test(ua)) device = 'Windows';
  else if (/Linux/.test(ua)) device = 'Linux';
  return `${browser} on ${device}`.slice(0, MAX_DEVICE_NAME);
}
